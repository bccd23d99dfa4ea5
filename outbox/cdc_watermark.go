package outbox

import (
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
)

// watermark is the stream's position: the end of the last transaction that,
// with every one before it, is settled (each of its events acknowledged and
// marked, recorded as failed, or handed off). Publishes run concurrently and
// settle out of order; the position moves only over a contiguous prefix, so
// a slow publish holds it back however many later ones finish.
type watermark struct {
	mu   sync.Mutex
	txns []*cdcTxn // received, not yet passed, in commit order
	pos  pglogrepl.LSN
	sent pglogrepl.LSN
	// events counts unsettled events, for back-pressure.
	events int
	// progress is signalled (without blocking) when events settle.
	progress chan struct{}
}

func newWatermark(start pglogrepl.LSN) *watermark {
	return &watermark{pos: start, sent: start, progress: make(chan struct{}, 1)}
}

// received appends a committed transaction.
func (w *watermark) received(t *cdcTxn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t.remaining = len(t.ids)
	w.events += len(t.ids)
	w.txns = append(w.txns, t)
	w.advanceLocked()
}

// settle settles one event of t.
func (w *watermark) settle(t *cdcTxn) {
	w.mu.Lock()
	t.remaining--
	w.events--
	w.advanceLocked()
	w.mu.Unlock()
	select {
	case w.progress <- struct{}{}:
	default:
	}
}

func (w *watermark) advanceLocked() {
	for len(w.txns) > 0 && w.txns[0].remaining <= 0 {
		w.pos = max(w.pos, w.txns[0].end)
		w.txns = w.txns[1:]
	}
}

// idle moves the position to the server's sent position when nothing is
// unsettled, so an outbox without inserts does not pin WAL that other
// tables write.
func (w *watermark) idle(serverEnd pglogrepl.LSN) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.txns) == 0 {
		w.pos = max(w.pos, serverEnd)
	}
}

// toConfirm returns the position to confirm and whether it moved since the
// last confirmation.
func (w *watermark) toConfirm() (pglogrepl.LSN, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pos, w.pos > w.sent
}

// confirmed records a confirmation sent.
func (w *watermark) confirmed(pos pglogrepl.LSN) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent = max(w.sent, pos)
}

func (w *watermark) unsettled() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events
}

// oldestUnsettled is the commit time of the oldest transaction not yet
// passed; false when there is none.
func (w *watermark) oldestUnsettled() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.txns) == 0 {
		return time.Time{}, false
	}
	return w.txns[0].committed, true
}
