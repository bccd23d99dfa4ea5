/* Removes the in-memory held check of the admission: an event CDCLeaseVerify kept enters its lane even when its predecessor, still under the stream's lease, left held (its lane broke on a failure). */
/* check: safety */
/* expect: FIRST STARTS IN ORDER | ONE EVENT IN FLIGHT PER ORDER | LANE ADMISSION */
#define CDC_NO_HELD_CHECK
#include "../cdc.pml"
