/* Removes the key order from retention's cursor check: a range is dropped once every cursor is past it by position, so an event with an early position and a late gate (its transaction took an earlier position but a later xid than one the cursor passed) is dropped before it is read. */
/* check: safety */
/* expect: NOTHING DROPPED UNREAD */
#define RETENTION
#define LOG_RETIRE_BY_POS
#define READERS 1
#define ORDERS 2
#define EVENTS 2
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
