/* Removes RelayClaimVerify: the claim commits what RelayClaim's snapshot judged claimable, even when a replay committed before its row lock was taken. */
/* check: safety */
/* expect: ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define NO_CLAIM_VERIFY
#include "../relay.pml"
