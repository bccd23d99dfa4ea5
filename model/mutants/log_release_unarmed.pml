/* Removes the arming of a hold's release: the hold worker deletes a hold that caught up with the cursor without bumping the cursor's epoch, so a reader whose view still has the hold passes the order's newer events as the hold's. */
/* check: safety */
/* expect: NO ADVANCE PAST AN UNPUBLISHED EVENT */
#define LOG_RELEASE_UNARMED
#define ORDERS 1
#define EVENTS 2
#define READERS 1
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
