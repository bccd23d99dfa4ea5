/* Removes the cap of the worker's local deadline by every blocker of the verify's view: capped by held blockers only (as wt-cdc fc03ab9 does), an event admitted behind a blocker marked since CDCLeaseVerify keeps its own local deadline, later than its claim_until capped in the database, so its publish can outlast its lease. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER */
#define CDC_LOCAL_CAP_HELD_ONLY
#include "../cdc.pml"
