/* Removes the held exclusion of the pipelined relay's claim (RelayClaim skips the events the relay still holds), leaving the guard of today's pipeline.claim alone: a relay that claims again an event it still holds does not queue it, but its open set and the database disagree while the bookkeeper writes. */
/* check: safety */
/* expect: NO ORPHANED CLAIM | ONE EVENT IN FLIGHT PER ORDER | NOTHING LOST */
#define NO_HELD_EXCLUSION
#define PIPELINE
#define ORDERS 1
#define MAX_OPS 0
#include "../relay.pml"
