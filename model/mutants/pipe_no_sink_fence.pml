/* Removes the owner fence of RelaySinkRelease (claimed_by = @owner): a sink fault's release, written late, gives back the claim and the attempt of the relay that took the event over, while that relay publishes it. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER */
#define NO_SINK_FENCE
#define PIPELINE
#define ORDERS 1
#define MAX_OPS 0
#include "../relay.pml"
