// Package testclock is the fake clock of the repository's tests: injected
// where the code under test takes a Now function, it lets a test step past a
// lifetime (the provider's 24-hour idempotency keys) without waiting.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that moves only when told. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
