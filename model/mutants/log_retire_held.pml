/* Removes the holds from retention's rule: a range is dropped while a hold still owns an event in it, whose hold worker never publishes it. */
/* check: safety */
/* expect: NOTHING DROPPED UNREAD */
#define RETENTION
#define LOG_RETIRE_HELD
#define READERS 1
#define ORDERS 2
#define EVENTS 2
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
