/* Removes CDCLeaseVerify: the stream keeps every event CDCLease leased and admits it on CDCSort's (older) blockers, recent being only what CDCMark returned. */
/* check: safety */
/* expect: LANE ADMISSION | ONE LEASE HOLDER PER ORDER | ONE LIVE LEASE PER ORDER | ONE EVENT IN FLIGHT PER ORDER */
#define CDC_NO_VERIFY
#include "../cdc.pml"
