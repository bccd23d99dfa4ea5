/* Removes the lane rule's look into the log: the poll relay publishes an event a producer back on poll wrote to outbox_events while an earlier event of its order is unpublished in the log (issue 37's defect 7: a switch back from the log reorders an order). */
/* check: safety */
/* expect: FIRST PUBLISHES IN ORDER */
#define SWITCH_POLL_IGNORES_LOG
#define SWITCH
#define QUAR0 0
#define READERS 1
#define ORDERS 1
#define EVENTS 2
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
