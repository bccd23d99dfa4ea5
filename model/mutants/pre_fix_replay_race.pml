/* Removes the READ COMMITTED replay fix (commit 893e71c): the claim is RelayClaim alone (no RelayClaimVerify), and the replay takes neither the lane lock (OpsReplayLockLanes) nor the fence (OpsReplayFence): the protocol as it stood before the fix. */
/* check: safety */
/* expect: ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define PRE_FIX_MUTANT
#include "../relay.pml"
