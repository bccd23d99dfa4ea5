/* Removes OpsReplayFence: the replay no longer waits for a claim transaction that holds a successor of the replayed event. */
/* check: safety */
/* expect: ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define NO_REPLAY_FENCE
#include "../relay.pml"
