/* Removes OpsReplayLockLanes: a replay no longer locks the order's outbox_sequences row, so an Enqueue of the order can commit after OpsReplayFence's snapshot and before the replay commits. */
/* check: safety */
/* expect: ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define NO_LANE_LOCK
#define ORDERS 1
#define MAX_OPS 1
#include "../relay.pml"
