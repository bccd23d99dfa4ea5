package providersim

import (
	"context"
	"maps"
	"net/http"
)

// Stats counts what the providers' idempotency rules absorbed, by operation
// ("payment_intents.create", "refunds.create", "emails.send"): requests that
// reused a key and got the first response replayed, and requests whose key
// was refused (other parameters, or still in flight). A client retrying
// safely shows replays and never a second effect in the ledger.
type Stats struct {
	// Replays counts, per operation, the requests answered with the stored
	// first response.
	Replays map[string]int `json:"replays"`
	// Rejected counts, per operation, the requests whose key was refused.
	Rejected map[string]int `json:"rejected"`
}

// stats is the mutable form kept in the store.
type stats struct {
	replays, rejected map[string]int
}

func newStats() stats {
	return stats{replays: map[string]int{}, rejected: map[string]int{}}
}

// Stats returns a snapshot of the idempotency counters.
func (s *Simulator) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Replays: maps.Clone(s.st.stats.replays), Rejected: maps.Clone(s.st.stats.rejected)}
}

func (s *Simulator) serveStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}

// Stats fetches GET /_sim/stats.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := c.do(ctx, http.MethodGet, "/_sim/stats", nil, &st)
	return st, err
}
