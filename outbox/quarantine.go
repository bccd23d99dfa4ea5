package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
func (r *Relay) recordFailures(ctx context.Context, fs []failure) (map[uuid.UUID]bool, error) {
	if len(fs) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(fs))
	msgs := make([]string, len(fs))
	delays := make([]int64, len(fs))
	perm := make([]bool, len(fs))
	for i, f := range fs {
		ids[i], msgs[i], delays[i], perm[i] = f.c.ID, truncate(f.err.Error(), 1000), f.delay.Milliseconds(), f.permanent()
	}
	rows, err := r.pool.Query(ctx, relayQueries.Get("RelayFail"), r.cfg.Owner, ids, msgs, delays, perm, r.cfg.MaxAttempts)
	if err != nil {
		return nil, fmt.Errorf("outbox: record %d failed publishes: %w", len(fs), err)
	}
	out := map[uuid.UUID]bool{}
	var (
		id          uuid.UUID
		quarantined bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &quarantined}, func() error {
		out[id] = quarantined
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: record %d failed publishes: %w", len(fs), err)
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
