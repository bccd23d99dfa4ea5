package service

import (
	"fmt"
	"strings"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/outbox"
)

// RelaySourceEnv is OUTFLOW_RELAY_SOURCE: the relay source of the
// database, which its producers must agree with. The starter reads it to
// choose its relay; the producers (the order API) to choose where their
// events go: outbox_events for poll and cdc, the append-only log for log.
const RelaySourceEnv = "OUTFLOW_RELAY_SOURCE"

// RelaySourceVar is [RelaySourceEnv] as a producer's -h lists it.
func RelaySourceVar() cli.Var {
	return cli.Var{Name: RelaySourceEnv, Default: "poll",
		Meaning: "the database's relay source, as the starter's: poll or cdc write events to outbox_events, log to the append-only log (outbox_log)"}
}

// Enqueuer reads [RelaySourceEnv] for a producer: the enqueuer that writes
// where the database's relay source reads. A value that is none of poll,
// cdc or log is refused.
func Enqueuer(env *Env) *outbox.Enqueuer {
	s := strings.TrimSpace(strings.ToLower(env.String(RelaySourceEnv, "poll")))
	switch s {
	case "poll", "cdc":
		return outbox.NewEnqueuer(outbox.EnqueueConfig{})
	case "log":
		return outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})
	}
	env.Fail(fmt.Errorf("%s=%q: want poll or cdc (events go to outbox_events, the default) or log (to the append-only log outbox_log), as the starter's", RelaySourceEnv, s))
	return nil
}
