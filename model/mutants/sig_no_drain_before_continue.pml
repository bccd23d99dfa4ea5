/* Removes Drain before continue-as-new: the signals still buffered when the run continues as new go with it, accepted by Temporal and never handed out. */
/* check: safety */
/* expect: NO SIGNAL LEFT BEHIND */
#define NO_DRAIN_BEFORE_CONTINUE
#include "../signal.pml"
