/* Removes the owner fence of CDCMark (defect 3 of issue 21): the stream's mark checks published_at IS NULL only, so a late mark lands on an event another relay published and an operator then replayed. */
/* check: safety */
/* expect: NOTHING LOST */
#define CDC_UNFENCED_MARK
#define GRACE_UNREACHED
#define ENQUEUE_OFF
#include "../cdc.pml"
