/* Removes Drain before the run completes: the signals buffered when the workflow returns go with the run, accepted by Temporal and never handed out. */
/* check: safety */
/* expect: NO SIGNAL LEFT BEHIND */
#define NO_DRAIN_BEFORE_CLOSE
#include "../signal.pml"
