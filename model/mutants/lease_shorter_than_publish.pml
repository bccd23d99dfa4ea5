/* Removes the lease rule that a publish ends before its lease (PublishTimeout <= Lease/2, publishDeadline): a lease may expire, and be taken over, while its holder's Publish call still runs. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER */
#define LEASE_SHORTER_THAN_PUBLISH
#include "../relay.pml"
