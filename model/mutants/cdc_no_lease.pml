/* Removes the stream's lease (defect 1 of issue 21, the stream as it stood before the fix): no CDCLease, no CDCLeaseVerify, no CDCRelease; admission on CDCSort's blockers against held and recent, recent being every event the stream tried to mark; CDCMark checks published_at IS NULL only. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER | ONE LIVE LEASE PER ORDER */
#define CDC_NO_LEASE
#define GRACE_UNREACHED
#include "../cdc.pml"
