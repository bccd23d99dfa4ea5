/* Removes the tail from a replay's retention check: a replay is refused only when its first event lies in a retiring range, so one from an event of a kept range makes a hold over the order's later event in a range retention is dropping, which is dropped unread (issue 37). */
/* check: safety */
/* expect: NOTHING DROPPED UNREAD */
#define RETENTION
#define RANGE_LO 2
#define RANGE_END 3
#define LOG_REPLAY_FIRST_ONLY
#define READERS 1
#define ORDERS 1
#define EVENTS 2
#define MAX_OPS 1
#define UNRELATED 0
#include "../log.pml"
