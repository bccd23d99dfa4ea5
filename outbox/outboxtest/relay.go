package outboxtest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// RelayPollIntervalDefault is the RelayConfig.PollInterval RunRelay uses
// when cfg leaves it zero: short, so a state a test forced without a NOTIFY
// (see [Force]) is claimed at once.
const RelayPollIntervalDefault = 50 * time.Millisecond

// relayStopTimeout bounds the relay's graceful shutdown at the test's end.
const relayStopTimeout = 30 * time.Second

// RunRelay runs a real [outbox.Relay] over pool, publishing to rec, until the
// returned stop is called or the test ends, whichever comes first; stop
// waits for the relay to finish its shutdown (each in-flight publish, its
// marks) and fails t if Run returned an error or did not stop. cfg is
// [outbox.RelayConfig] with these test defaults for the fields left zero:
// PollInterval [RelayPollIntervalDefault], and a Logger that discards
// everything.
func RunRelay(t testing.TB, pool *pgxpool.Pool, rec *Recorder, cfg outbox.RelayConfig) (stop func()) {
	t.Helper()
	if cfg.PollInterval == 0 {
		cfg.PollInterval = RelayPollIntervalDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if rec.DB == nil {
		rec.DB = pool
	}
	r, err := outbox.NewRelay(pool, rec, cfg)
	require.NoError(t, err, "outboxtest: build the relay")
	return Run(t, r)
}

// Runner is what [Run] runs: a relay of any source.
type Runner = outbox.Runner

// Run runs r until the returned stop is called or the test ends, whichever
// comes first; stop waits for r to finish its shutdown and fails t if Run
// returned an error or did not stop. It is [RunRelay] for a relay the test
// built itself (its own publisher, a CDC relay).
func Run(t testing.TB, r Runner) (stop func()) {
	t.Helper()
	// Not t.Context(): the test's own context ends before its cleanups,
	// and the relay must outlive a cleanup that comes before this one's.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("outboxtest: relay %s: %v", r.Owner(), err)
				}
			case <-time.After(relayStopTimeout):
				t.Errorf("outboxtest: relay %s did not stop within %s", r.Owner(), relayStopTimeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
