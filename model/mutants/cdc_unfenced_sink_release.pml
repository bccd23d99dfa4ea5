/* Removes the owner fence of the stream's RelaySinkRelease (claimed_by = the stream's owner): a sink fault's release, written after the stream's lease expired, clears the claim of the relay that took the event over and gives back its attempt, so the event is claimable again while that relay publishes it. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER | ONE LIVE LEASE PER ORDER */
#define CDC_UNFENCED_SINK_RELEASE
#define GRACE_UNREACHED
#define ENQUEUE_OFF
#include "../cdc.pml"
