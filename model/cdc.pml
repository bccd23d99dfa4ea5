/*
 * The CDC relay source, model-checked: the stream (stream.pml) beside its
 * sweeper (poll.pml's Relay, whose claim already leaves the stream young
 * events: the model lets it claim any, so Grace, hand-offs, retries,
 * replays and the backfill are all covered), a standby that takes the slot
 * when the stream's process dies, and the operator's retry, skip and
 * replay, in every interleaving. The defaults: 1 sweeper, 1 order x 2
 * events, 1 operator command. README.md has the configurations checked.
 */
#define CDC
#ifndef RELAYS
#define RELAYS 1
#endif
#ifndef ORDERS
#define ORDERS 1
#endif
#include "relay.pml"
