/* Removes the lease takeover: RelayClaim no longer claims an event whose lease expired (claim_until < now()), so a crashed relay's event is never published. */
/* check: liveness */
/* expect: settle */
#define NO_TAKEOVER
#define LIVENESS
#define ORDERS 1
#include "../relay.pml"
