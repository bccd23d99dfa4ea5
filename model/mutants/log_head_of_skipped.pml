/* Removes the skips from a hold's head: a hold's next event may be one an operator skipped, so a replay of the order from an earlier event publishes the skipped one (issue 37: a skipped OrderCreated starts its saga). */
/* check: safety */
/* expect: SKIP IS FINAL */
#define LOG_HEAD_OF_SKIPPED
#define ORDERS 1
#define EVENTS 2
#define READERS 1
#define MAX_OPS 2
#define UNRELATED 0
#include "../log.pml"
