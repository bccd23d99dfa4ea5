/*
 * A signal route (temporalpub.Route.Signal), model-checked: the Relay of
 * poll.pml delivers each event as a signal to its order's workflow with
 * Signal-With-Start, and that workflow receives through an
 * eventsignal.Receiver (receiver.pml), in every interleaving of relays,
 * crashes, lease expiry, enqueues, the operator's retry, skip and replay,
 * and the workflow's own steps: receive, continue-as-new, complete.
 * -DCLOSED_WORKFLOW gives the route a ClosedWorkflow; without it a signal
 * its closed target refuses is quarantined. The defaults: 2 relays,
 * 1 order x 2 events, 1 operator command, one continue-as-new. README.md
 * ("The signal route") has the configurations checked.
 */
#define SIGNAL
#ifndef ORDERS
#define ORDERS 1
#endif
#include "relay.pml"
