/* Removes the owner fence of RelayMark: the mark no longer requires claimed_by = the relay's owner, so a relay whose lease was taken over (or cleared by an operator) still marks the event published. */
/* check: safety */
/* expect: FENCED MARK */
#define NO_OWNER_FENCE
#include "../relay.pml"
