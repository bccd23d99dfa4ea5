package ctl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/outflow/outflow/outbox/outboxops"
)

// runSource prints the database's relay source, or changes it: `source
// set poll|cdc|log` prints the plan (what each table still holds, what
// happens to it) and changes the source once confirmed; without --yes and
// without a terminal it is a dry run.
func runSource(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "source", "source\n       outboxctl source set poll|cdc|log [--reason TEXT] [--actor NAME] [--yes]\n\n"+
		"The relay's source is recorded in the database: producers (outbox.Enqueue) write where it says\n"+
		"(poll and cdc: outbox_events; log: the append-only log) and every starter follows it within a\n"+
		"second, without a restart. A change is safe while producers and relays run: the new source's relay\n"+
		"publishes what the old one left first, each order's events stay in sequence across both tables,\n"+
		"and the old table keeps being swept. cdc needs wal_level=logical; a starter that leaves cdc drops\n"+
		"the replication slot once no relay streams it.")
	reason := fs.String("reason", "", "why the source changes (recorded with the change)")
	actor := fs.String("actor", env.Actor, "who decided the change (recorded)")
	yes := YesFlag(fs)
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	var to string
	switch {
	case len(pos) == 0:
	case pos[0] == "set" && len(pos) == 2:
		if to, err = outboxops.ParseSource(pos[1]); err != nil {
			return Usagef(fs, "%v", err)
		}
	case pos[0] == "set":
		return Usagef(fs, "set takes one source: poll, cdc or log")
	default:
		return Usagef(fs, "unexpected argument %q: `outboxctl source` prints the source, `outboxctl source set poll|cdc|log` changes it", pos[0])
	}
	if to != "" && strings.TrimSpace(*actor) == "" {
		return Usagef(fs, "--actor may not be empty")
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := outboxops.Source(ctx, pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "relay source: %s (since %s, by %s%s)\n", st.Source, st.ChangedAt.UTC().Format(time.RFC3339), st.ChangedBy, reasonSuffix(st.Reason))
	fmt.Fprintf(env.Stdout, "  outbox_events: %d to publish, %d quarantined\n", st.EventsPending, st.EventsQuarantined)
	fmt.Fprintf(env.Stdout, "  log:           %d to publish, %d orders under a hold (%d quarantined)\n", st.LogPending, st.LogHolds, st.LogQuarantined)
	if to == "" {
		return nil
	}
	if to == st.Source {
		fmt.Fprintf(env.Stdout, "the source is %s already; nothing to change\n", to)
		return nil
	}
	if err := outboxops.CheckSource(ctx, pool, to); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	fmt.Fprintf(env.Stdout, "plan: %s → %s\n", st.Source, to)
	fmt.Fprintf(env.Stdout, "  producers write to %s from their next transaction; one that read the old source writes where it read\n", table(to))
	fmt.Fprintf(env.Stdout, "  every starter switches within a second: %s's relay publishes what %s still holds first, then keeps sweeping it\n", to, table(st.Source))
	if q := st.EventsQuarantined + st.LogQuarantined; q > 0 {
		fmt.Fprintf(env.Stdout, "  %d quarantined events do not hold the switch; their orders wait, in both tables, for retry or skip\n", q)
	}
	if st.Source == outboxops.SourceCDC {
		fmt.Fprintln(env.Stdout, "  the cdc replication slot is dropped by the last starter that leaves cdc")
	}
	if ok, err := Proceed(env, *yes, Change{
		Question: fmt.Sprintf("Switch the relay source to %s? [y/N] ", to),
		Done:     "changed",
		Todo:     "switch to " + to,
	}); !ok {
		return err
	}
	c, err := outboxops.SetSource(ctx, pool, to, *actor, *reason)
	if err != nil {
		return err
	}
	env.Logger.Info("outboxctl: relay source changed", "from", c.Previous, "to", to, "actor", *actor, "reason", *reason)
	fmt.Fprintf(env.Stdout, "relay source: %s → %s at %s (by %s); producers and starters follow it now\n",
		c.Previous, to, c.ChangedAt.UTC().Format(time.RFC3339), strings.TrimSpace(*actor))
	return nil
}

// table names where source's producers write.
func table(source string) string {
	if source == outboxops.SourceLog {
		return "the log (outbox_log)"
	}
	return "outbox_events"
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
