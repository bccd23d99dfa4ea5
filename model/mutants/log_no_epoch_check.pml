/* Removes the epoch check of the cursor's advance: a reader that read the holds before a hold was released still skips the released order's events as the hold's, and advances past them, which nobody publishes then. */
/* check: safety */
/* expect: NO ADVANCE PAST AN UNPUBLISHED EVENT */
#define LOG_NO_EPOCH_CHECK
#define ORDERS 1
#define EVENTS 2
#define READERS 1
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
