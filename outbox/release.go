package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/internal/relaysql"
)

// release gives back claims that were never attempted, fenced by the owner:
// a claim another relay took over is not touched. It returns the number of
// events released.
func (r *pollRelay) release(ctx context.Context, ids []uuid.UUID) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := qRelayRelease.Exec(ctx, r.pool, relaysql.EventsArgs{Owner: r.cfg.Owner, EventIDs: ids})
	if err != nil {
		return 0, fmt.Errorf("outbox: release %d claims: %w", len(ids), err)
	}
	return tag.RowsAffected(), nil
}

// throttleRetry is the ceiling of the delay before a throttled event is
// claimed again (full jitter): the throttle has already slowed the relay,
// so the event only steps aside for a moment.
const throttleRetry = time.Second

// sinkFailure is the record of c's publish that failed for the sink's fault
// f: its error says that no attempt was counted, and a throttled event waits
// a moment before it is claimed again. A sink that is down needs no delay:
// the breaker stops the claims.
func (r *pollRelay) sinkFailure(c claimed, err error, f fault) failure {
	var delay time.Duration
	if f == faultThrottle {
		delay = Backoff{Base: throttleRetry, Max: throttleRetry}.Delay(1)
	}
	return failure{c: c, err: fmt.Errorf("%s fault, no attempt counted: %w", f, err), delay: delay}
}

// releaseSinkFaults gives back the claims of owner (the relay's, or its CDC
// stream's) whose publishes failed for the sink's fault, with the attempt
// returned and the error recorded (RelaySinkRelease), and returns when the
// delayed ones become available again. A failed release is logged: the
// leases expire, and the attempts counted at claim stay counted.
func (r *pollRelay) releaseSinkFaults(bk context.Context, owner string, fs []failure) []time.Time {
	if len(fs) == 0 {
		return nil
	}
	a := relaySinkReleaseArgs{
		Owner:    owner,
		EventIDs: make([]uuid.UUID, len(fs)),
		Errors:   make([]string, len(fs)),
		DelaysMS: make([]int64, len(fs)),
	}
	var retryAts []time.Time
	now := time.Now()
	for i, f := range fs {
		a.EventIDs[i], a.Errors[i], a.DelaysMS[i] = f.c.ID, truncate(f.err.Error(), 1000), f.delay.Milliseconds()
		if f.delay > 0 {
			retryAts = append(retryAts, now.Add(f.delay))
		}
	}
	ctx, cancel := context.WithTimeout(bk, bookkeepingTimeout)
	defer cancel()
	if _, err := qRelaySinkRelease.All(ctx, r.pool, a); err != nil {
		r.cfg.Logger.Error("outbox relay: giving back claims the sink failed failed; they return when their lease expires",
			"owner", owner, "events", len(fs), "error", err)
		return nil
	}
	r.cfg.Logger.Debug("outbox relay: gave back claims the sink failed, no attempts counted", "owner", owner, "events", len(fs), "error", fs[0].err)
	return retryAts
}
