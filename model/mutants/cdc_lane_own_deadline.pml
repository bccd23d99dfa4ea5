/* Removes the lane's shared deadline (the protocol of cdc-protocol.md as first written): each stream lease keeps its own deadline, now() + lease, so an earlier event of a lane, acknowledged and not yet marked, can expire and be taken over by the sweeper while a later one is under the stream's lease. */
/* check: safety */
/* expect: LANE ADMISSION | ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define CDC_LANE_OWN_DEADLINE
#include "../cdc.pml"
