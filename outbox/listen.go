package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/namedsql"
)

// listenBackoff paces listener reconnects.
var listenBackoff = Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second}

// listen keeps a dedicated connection LISTENing on [NotifyChannel] and wakes
// the relay on every notification. After a connection loss it reconnects
// with backoff and wakes the relay once more right after LISTEN succeeds:
// notifications sent while it was away are lost, and that claim finds their
// events. It returns when ctx ends.
func (r *Relay) listen(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		connected, err := r.listenSession(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures = 0
		}
		failures++
		delay := listenBackoff.Delay(failures)
		r.cfg.Logger.Warn("outbox relay: listener lost its connection; reconnecting (the safety poll covers the gap)",
			"owner", r.cfg.Owner, "retry_in", delay, "error", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenSession runs one listener connection until it fails. connected
// reports whether LISTEN succeeded.
func (r *Relay) listenSession(ctx context.Context) (connected bool, err error) {
	cfg := r.listenConfig.Copy()
	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(connectCtx, cfg)
	cancel()
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := qRelayListen.Exec(ctx, conn, namedsql.NoArgs{}); err != nil {
		return false, fmt.Errorf("LISTEN %s: %w", NotifyChannel, err)
	}
	r.wakeUp() // claim once: anything committed before LISTEN sent no notification we saw
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return true, err
		}
		r.wakeUp()
	}
}

// wakeUp asks the relay loop to claim now; wake-ups coalesce.
func (r *Relay) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
