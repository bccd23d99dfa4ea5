/* Removes the Receiver's State carried across continue-as-new (Receiver.State into the next run's input, back to New): the next run starts from the zero State, so a re-delivery of an event the previous run applied is applied again. */
/* check: safety */
/* expect: EFFECTS ONCE */
#define NO_STATE_CARRY
#include "../signal.pml"
