/* Removes CDCLease's FOR UPDATE: locked FOR NO KEY UPDATE, the stream's lease transaction does not make OpsReplayFence (FOR KEY SHARE) wait, so a replay of a predecessor commits between CDCLeaseVerify and the lease's COMMIT. */
/* check: safety */
/* expect: LANE ADMISSION | ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define CDC_LEASE_NO_KEY_UPDATE
#include "../cdc.pml"
