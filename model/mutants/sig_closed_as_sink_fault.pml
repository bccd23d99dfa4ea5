/* Removes the rule that a closed target's refusal is the event's own, final fault (outbox.Permanent, or the ClosedWorkflow's start): taken for the sink's fault (no attempt counted, the claim given back), the event is claimed, refused and given back for good, and its order never moves on. */
/* check: liveness */
/* expect: settle */
#define CLOSED_AS_SINK_FAULT
#define LIVENESS
#define MAX_FAULTS 0
#define MAX_OPS 0
#include "../signal.pml"
