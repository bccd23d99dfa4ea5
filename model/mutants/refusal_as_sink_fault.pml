/* Removes the rule that an event the sink refuses for good (larger than it takes, or a publish that always runs out of time while the sink answers the others) is the event's own fault: taken for the sink's fault, as a throttle or a timeout was before issue 37, it costs no attempt and is never quarantined: claimed, refused and given back for ever, while its order's later events wait behind it. */
/* check: liveness */
/* expect: settle */
#define REFUSAL_AS_SINK_FAULT
#define LIVENESS
#define REFUSED 0
#define ORDERS 1
#define EPO 2
#define MAX_FAULTS 0
#define MAX_OPS 0
#include "../relay.pml"
