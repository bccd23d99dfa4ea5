/* Removes the held exclusion as pipe_guard_only does, and the NO ORPHANED CLAIM check, to show the guard's other race: the bookkeeper writes the old outcome (releasing the new claim of the same owner) and leaves the open set between the claim's COMMIT and the claimer's look-up, which then queues a second publish. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER */
#define NO_HELD_EXCLUSION
#define NO_ORPHAN_CHECK
#define PIPELINE
#define ORDERS 1
#define MAX_OPS 0
#include "../relay.pml"
