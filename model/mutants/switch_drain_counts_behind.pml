/* Removes the switch's skip of a quarantine: the drain before the log's reader waits for an event of outbox_events behind a quarantined one of its order, which the poll relay's lane rule never publishes (issue 37's defect 2), so the switch never ends and the log's events of every order are stranded. */
/* check: liveness */
/* expect: settle */
#define SWITCH_DRAIN_COUNTS_BEHIND
#define SWITCH
#define LIVENESS
#define READERS 1
#define ORDERS 2
#define EVENTS 2
#define MAX_FAULTS 0
#define MAX_OPS 1
#define UNRELATED 0
#include "../log.pml"
