/* Removes the rule that the mark follows Temporal's acceptance of the signal: the relay marks the event published before its Signal-With-Start, so a crash in between loses it. */
/* check: safety */
/* expect: NOTHING LOST */
#define MARK_BEFORE_PUBLISH
#include "../signal.pml"
