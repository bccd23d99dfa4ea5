/* Removes the window shrink: relays that keep dying at one cursor position read the same full window every time, so the event that kills whoever publishes it is never isolated as a hold and the partition never moves on. */
/* check: liveness */
/* expect: settle */
#define LOG_NO_WINDOW_SHRINK
#define LIVENESS
#define POISON 0
#define ORDERS 1
#define EVENTS 2
#define READERS 1
#define MAX_OPS 0
#define MAX_FAULTS 0
#define UNRELATED 0
#include "../log.pml"
