/* Removes the stream's publish deadline (publishDeadline on the stream's lease): a worker publishes a lane's head even when its lease expired, was taken over or was cleared by an operator while it waited in its lane. */
/* check: safety */
/* expect: ONE EVENT IN FLIGHT PER ORDER | ONE LIVE LEASE PER ORDER | FENCED MARK | NOTHING LOST */
#define CDC_NO_PUBLISH_DEADLINE
#include "../cdc.pml"
