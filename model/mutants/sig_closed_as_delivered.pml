/* Removes the refusal of a closed target as the event's fault: Publisher.signal takes WorkflowExecutionAlreadyStarted for an acknowledgement, as Publisher.start does, so the relay marks an event no workflow got. */
/* check: safety */
/* expect: NOTHING LOST */
#define CLOSED_AS_DELIVERED
#include "../signal.pml"
