/* Removes the lane rule (outbox_unpublished_predecessors in RelayClaim and RelayClaimVerify) on a signal route: an order's later event is signalled before an earlier one was accepted, and the workflow applies them out of order. */
/* check: safety */
/* expect: APPLIED IN ORDER | ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define NO_LANE_RULE
#define RELAYS 1
#include "../signal.pml"
