/* Removes the arming of a replay's hold: the operator's replay inserts a hold without bumping the cursor's epoch, so a reader whose view has no hold on the order still advances, and its own hold for a failure of that order replaces the replay's, which loses the replayed event. */
/* check: safety */
/* expect: NO ADVANCE PAST AN UNPUBLISHED EVENT */
#define LOG_REPLAY_UNARMED
#define ORDERS 1
#define EVENTS 2
#define READERS 1
#define MAX_OPS 1
#define UNRELATED 0
#include "../log.pml"
