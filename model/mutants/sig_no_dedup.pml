/* Removes the Receiver's dedup by event ID (Receiver.accept): every signal Temporal accepted is handed to the workflow's code, so a re-delivery after a lost mark is applied twice. */
/* check: safety */
/* expect: EFFECTS ONCE */
#define NO_DEDUP
#include "../signal.pml"
