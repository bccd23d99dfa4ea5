/* Removes the ClosedWorkflow's check of the target's effects: it acts on every event it is started for, also on a re-delivery of an event the target applied before it closed (refused like a late one). */
/* check: safety */
/* expect: EFFECTS ONCE */
#define CLOSED_WORKFLOW
#define NO_CLOSED_INBOX_CHECK
#include "../signal.pml"
