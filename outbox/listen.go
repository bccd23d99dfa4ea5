package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/namedsql"
)

// listenBackoff paces listener reconnects.
var listenBackoff = Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second}

// listen keeps a dedicated connection LISTENing on [NotifyChannel] and wakes
// the relay on every notification. After a connection loss it reconnects
// with backoff and wakes the relay once more right after LISTEN succeeds:
// notifications sent while it was away are lost, and that claim finds their
// events. It returns when ctx ends.
func (r *pollRelay) listen(ctx context.Context) {
	l := listener{config: r.listenConfig, stmt: qRelayListen, channel: NotifyChannel, logger: r.cfg.Logger, owner: r.cfg.Owner}
	l.run(ctx, func(string) { r.wakeUp() })
}

// listener is a dedicated connection that LISTENs with stmt on channel.
type listener struct {
	config  *pgx.ConnConfig
	stmt    namedsql.Stmt[namedsql.NoArgs, namedsql.NoRows]
	channel string
	logger  *slog.Logger
	owner   string
}

// run listens until ctx ends, calling notify with each notification's
// payload, and with "" right after each LISTEN succeeds (what was sent
// while it was away is lost: the caller looks once). It reconnects with
// backoff after a connection loss.
func (l listener) run(ctx context.Context, notify func(payload string)) {
	failures := 0
	for ctx.Err() == nil {
		connected, err := l.session(ctx, notify)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures = 0
		}
		failures++
		delay := listenBackoff.Delay(failures)
		l.logger.Warn("outbox relay: listener lost its connection; reconnecting (the safety poll covers the gap)",
			"owner", l.owner, "channel", l.channel, "retry_in", delay, "error", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// session runs one listener connection until it fails. connected reports
// whether LISTEN succeeded.
func (l listener) session(ctx context.Context, notify func(string)) (connected bool, err error) {
	cfg := l.config.Copy()
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
	if _, err := l.stmt.Exec(ctx, conn, namedsql.NoArgs{}); err != nil {
		return false, fmt.Errorf("LISTEN %s: %w", l.channel, err)
	}
	notify("") // look once: anything committed before LISTEN sent no notification we saw
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		notify(n.Payload)
	}
}

// wakeUp asks the relay loop to claim now; wake-ups coalesce.
func (r *pollRelay) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
