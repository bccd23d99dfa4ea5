/* Removes the tombstone from a skipped head: the hold worker hands a skipped event's payload as a publish rather than its tombstone, so the skip's own hold, or a replay of the order over the skip, publishes the skipped event (issue 37: a skipped OrderCreated starts its saga). */
/* check: safety */
/* expect: SKIP IS FINAL */
#define LOG_HEAD_OF_SKIPPED
#define ORDERS 1
#define EVENTS 2
#define READERS 1
#define MAX_OPS 2
#define UNRELATED 0
#include "../log.pml"
