/* Removes the held exclusion and the guard of pipeline.claim (an event the relay still holds is queued again): the old outcome, fenced by the same owner, releases the new claim while its publish is queued or runs. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER */
#define NO_HELD_EXCLUSION
#define NO_OPEN_GUARD
#define PIPELINE
#define ORDERS 1
#define MAX_OPS 0
#include "../relay.pml"
