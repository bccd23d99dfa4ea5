/* Removes the rule that an event the sink refuses for good (larger than it takes, or a publish that always runs out of time while the sink answers the others) is the event's own fault: taken for the sink's fault, as a throttle or a timeout was before issue 37, it makes no hold, the batch stops at it every time, and the partition's cursor never passes it: its order and every other order of the partition wait for ever. */
/* check: liveness */
/* expect: settle */
#define REFUSAL_AS_SINK_FAULT
#define LIVENESS
#define REFUSED 0
#define ORDERS 2
#define EVENTS 2
#define READERS 1
#define MAX_OPS 0
#define MAX_FAULTS 0
#define UNRELATED 0
#include "../log.pml"
