/* Removes the rule that recent is only a hint (defect 2 of issue 21): a predecessor in recent (marked by the stream within recentFor) counts as the stream's own, in CDCLeaseVerify too, even once an operator replayed it; and a failed mark enters recent. */
/* check: safety */
/* expect: LANE ADMISSION */
#define CDC_RECENT_AS_OWN
#define GRACE_UNREACHED
#include "../cdc.pml"
