/* Removes the stream's lease, as cdc_no_lease does (the stream before the fix), with the sweeper taking any event older than Grace: the stream and the sweeper publish one event at once, since nothing but CDCSort's earlier snapshot keeps the stream off an event the sweeper just claimed. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER */
#define CDC_NO_LEASE
#include "../cdc.pml"
