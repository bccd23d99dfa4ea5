package providersim

import (
	"context"
	"net/http"
	"time"
)

// abortConnection ends the handler without any response: the client sees
// the connection drop, the way a provider's answer is lost on the network.
// http.ErrAbortHandler is the net/http sentinel for exactly this, and it
// keeps the server from logging a stack trace.
func abortConnection() {
	panic(http.ErrAbortHandler)
}

// wait sleeps for d, returning false early when the client goes away or the
// simulator closes.
func (s *Simulator) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

// hang holds a request until its client gives up or the simulator closes.
// It never returns normally, so nothing is written.
func (s *Simulator) hang(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.closing:
	}
	abortConnection()
}
