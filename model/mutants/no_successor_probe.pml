/* Removes the successor-lease probe: a replayed event no longer waits (in RelayClaim and RelayClaimVerify) for a later event of its order that is under a live lease. */
/* check: safety */
/* expect: ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define NO_SUCCESSOR_PROBE
#include "../relay.pml"
