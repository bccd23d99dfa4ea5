/* Removes the lane gate's greatest(): the enqueue stamps the event with its own transaction's xid, so a transaction that took its xid before an overlapping one of the same order, and its lane lock after it, gets the later sequence under the earlier gate, and the reader's (gate, pos) order delivers [2 1]. */
/* check: safety */
/* expect: FIRST PUBLISHES IN ORDER */
#define LOG_GATE_OWN_XID
#define ORDERS 1
#define EVENTS 2
#define READERS 1
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
