/* Removes Publisher.signal's REUSE_POLICY_REJECT_DUPLICATE: Signal-With-Start starts a closed target anew, from its zero input, whose Receiver remembers nothing, so a re-delivery of an event the closed run applied is applied again. */
/* check: safety */
/* expect: EFFECTS ONCE */
#define SIGNAL_RESTARTS_CLOSED
#include "../signal.pml"
