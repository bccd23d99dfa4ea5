/* Removes the held exclusion but serializes the claimer and the bookkeeper with a mutex (the guard's races closed): an operator's replay between the relay's old claim and its new one is then marked published by the old claim's outcome, fenced by the same owner. */
/* check: safety */
/* expect: NOTHING LOST */
#define NO_HELD_EXCLUSION
#define CLAIM_MUTEX
#define PIPELINE
#define ORDERS 1
#define MAX_OPS 1
#include "../relay.pml"
