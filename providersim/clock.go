package providersim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// clock is the simulator's time: the Options.Now clock moved forward by an
// offset that POST /_sim/clock advances. Moving time is how a test shows
// what happens after the providers' 24-hour idempotency key lifetime without
// waiting a day: keys expire and new objects are stamped later, exactly as
// they would be a day from now.
type clock struct {
	base   func() time.Time
	offset atomic.Int64 // nanoseconds
}

func (c *clock) now() time.Time { return c.base().Add(time.Duration(c.offset.Load())) }

// Advance moves the simulator's clock forward by d (never backward: an
// idempotency record's age would go negative) and returns the new time.
func (s *Simulator) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, fmt.Errorf("providersim: the clock only moves forward; got %s", d)
	}
	s.clk.offset.Add(int64(d))
	return s.clk.now(), nil
}

// clockRequest is the body of POST /_sim/clock.
type clockRequest struct {
	// Advance is a Go duration such as "25h".
	Advance string `json:"advance"`
}

// clockResponse is the answer of /_sim/clock: the simulator's time now.
type clockResponse struct {
	Now time.Time `json:"now"`
}

func (s *Simulator) serveClock(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, clockResponse{Now: s.clk.now()})
		return
	}
	var req clockRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, simError{Error: "providersim: clock body: " + err.Error() + `: want {"advance": "25h"}`})
		return
	}
	d, err := time.ParseDuration(req.Advance)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, simError{Error: fmt.Sprintf("providersim: advance %q: want a Go duration such as 25h", req.Advance)})
		return
	}
	now, err := s.Advance(d)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, simError{Error: err.Error()})
		return
	}
	s.log.Info("providersim: clock advanced", "by", d, "now", now)
	writeJSON(w, http.StatusOK, clockResponse{Now: now})
}

// Advance moves the simulator's clock forward by d (POST /_sim/clock):
// idempotency keys older than 24 hours of simulated time are forgotten.
func (c *Client) Advance(ctx context.Context, d time.Duration) (time.Time, error) {
	var resp clockResponse
	err := c.do(ctx, http.MethodPost, "/_sim/clock", clockRequest{Advance: d.String()}, &resp)
	return resp.Now, err
}
