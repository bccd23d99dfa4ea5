/* Removes the lane rule: RelayClaim and RelayClaimVerify no longer hold an event back behind an unpublished, unskipped predecessor of its order (outbox_unpublished_predecessors). */
/* check: safety */
/* expect: FIRST STARTS IN ORDER | ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define NO_LANE_RULE
#include "../relay.pml"
