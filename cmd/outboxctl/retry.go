package main

import (
	"context"
	"fmt"

	"github.com/outflow/outflow/outbox"
)

// runRetry makes a quarantined or backing-off event available now.
func runRetry(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "retry", "retry EVENT_ID")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	id, err := eventIDArg(fs, pos)
	if err != nil {
		return err
	}
	pool, err := openDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	c, err := outbox.Retry(ctx, pool, id)
	if err != nil {
		return err
	}
	env.logger.Info("outboxctl: event retried", "event_id", id, "actor", env.actor,
		"aggregate_type", c.Before.AggregateType, "aggregate_id", c.Before.AggregateID, "aggregate_sequence", c.Before.Sequence,
		"previous_state", c.Before.State, "previous_attempts", c.Before.Attempts, "last_error", c.Before.LastError)
	fmt.Fprintf(env.stdout, "retried %s (%s %s/%s seq=%d): %s -> %s, attempts %d -> %d; relays were woken\n",
		id, c.After.Type, c.After.AggregateType, c.After.AggregateID, c.After.Sequence,
		c.Before.State, c.After.State, c.Before.Attempts, c.After.Attempts)
	return nil
}
