/* Removes the rule that the cursor advances only over events already published: the reader advances over its batch first and publishes it afterwards, so a crash in between loses the batch. */
/* check: safety */
/* expect: NO ADVANCE PAST AN UNPUBLISHED EVENT */
#define LOG_ADVANCE_BEFORE_PUBLISH
#define READERS 1
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
