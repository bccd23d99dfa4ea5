/* Removes the seal's xmin check from retention: a range is dropped once the sequence has passed it, while a writer that took a position in it is still open, and its event commits into a dropped range. */
/* check: safety */
/* expect: NOTHING DROPPED UNREAD */
#define RETENTION
#define LOG_RETIRE_UNSEALED
#define READERS 1
#define ORDERS 2
#define EVENTS 2
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
