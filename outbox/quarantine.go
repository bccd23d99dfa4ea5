package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// failure is a publish that did not end in an acknowledgement.
type failure struct {
	c     claimed
	err   error
	delay time.Duration
}

// permanent reports whether no retry can fix err.
func (f failure) permanent() bool { return errors.Is(f.err, ErrPermanent) }

// recordFailures writes the failed publishes in one statement, fenced by the
// owner, and releases their leases. Each event gets its error and either a
// backoff (available_at moves to the future) or, when the error is permanent
// or the event has used up MaxAttempts, quarantine: a quarantined event is
// never claimed again until an operator acts, and it holds back its
// aggregate's later events (they still see an unpublished predecessor).
// It returns the events it changed and whether each was quarantined.
func (r *pollRelay) recordFailures(ctx context.Context, fs []failure) (map[uuid.UUID]bool, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	a := relayFailArgs{
		Owner:       r.cfg.Owner,
		EventIDs:    make([]uuid.UUID, len(fs)),
		Errors:      make([]string, len(fs)),
		DelaysMS:    make([]int64, len(fs)),
		Permanent:   make([]bool, len(fs)),
		MaxAttempts: r.cfg.MaxAttempts,
	}
	for i, f := range fs {
		a.EventIDs[i], a.Errors[i], a.DelaysMS[i], a.Permanent[i] = f.c.ID, truncate(f.err.Error(), 1000), f.delay.Milliseconds(), f.permanent()
	}
	recorded, err := qRelayFail.All(ctx, r.pool, a)
	if err != nil {
		return nil, fmt.Errorf("outbox: record %d failed publishes: %w", len(fs), err)
	}
	out := make(map[uuid.UUID]bool, len(recorded))
	for _, f := range recorded {
		out[f.EventID] = f.Quarantined
	}
	return out, nil
}

// truncate bounds s to n bytes without splitting a UTF-8 sequence, and
// replaces what PostgreSQL's text refuses (invalid UTF-8, NUL), so recording
// an odd error can never fail.
func truncate(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "?"), "\x00", "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
