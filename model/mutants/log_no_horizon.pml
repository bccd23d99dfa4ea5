/* Removes the horizon: the reader reads every committed row past the cursor, ignoring gate < pg_snapshot_xmin, so a transaction that took an earlier xid and commits later lands behind the cursor. */
/* check: safety */
/* expect: NO EVENT BEHIND THE CURSOR */
#define LOG_NO_HORIZON
#define READERS 1
#define MAX_OPS 0
#define UNRELATED 0
#include "../log.pml"
