/* Removes the rule that the workflow creates its Receiver first thing (eventsignal.New before any other read of the channel): the run's first task takes the signals buffered before it (Signal-With-Start's, and any that came before the task) past the Receiver, so a duplicate among them is applied twice. */
/* check: safety */
/* expect: EFFECTS ONCE */
#define RECEIVER_LATE
#include "../signal.pml"
