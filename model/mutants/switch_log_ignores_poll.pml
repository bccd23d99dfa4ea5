/* Removes the log's waits: the log's reader and hold worker publish an event whose order has an earlier event unpublished in outbox_events (behind a quarantined one there, which the switch does not wait for), so the order's log event overtakes it. */
/* check: safety */
/* expect: FIRST PUBLISHES IN ORDER */
#define SWITCH_LOG_IGNORES_POLL
#define SWITCH
#define READERS 1
#define ORDERS 1
#define EVENTS 2
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
