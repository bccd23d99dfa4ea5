package providersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The operations a fault can target (docs/reference.md, "Provider simulators").
const (
	OperationPaymentIntentsCreate = "payment_intents.create"
	OperationPaymentIntentsCancel = "payment_intents.cancel"
	OperationRefundsCreate        = "refunds.create"
	OperationEmailsSend           = "emails.send"
)

// Fault queues a failure for the next Count calls of Operation. It is the
// body of POST /_sim/faults.
//
// Fault is one of:
//   - "error_500": a 500 in the provider's error shape; nothing is committed
//     and the idempotency key is not stored, so a retry with the same key
//     executes normally.
//   - "latency:DURATION" (time.ParseDuration syntax, e.g. "latency:2s"): the
//     call waits DURATION with its idempotency key in flight, then runs. A
//     caller that gives up during the wait leaves nothing behind.
//   - "timeout_after_commit": the effect and the key's stored response are
//     committed, then the call never answers; the caller's outcome is
//     unknown, and a retry with the same key replays the committed response.
//   - "decline": the charge is declined with card_declined/generic_decline
//     whatever the payment method (payment_intents.create only).
type Fault struct {
	// Operation is the call the fault targets: one of the Operation
	// constants.
	Operation string `json:"operation"`
	// Fault is what happens to the call, in the syntax above.
	Fault string `json:"fault"`
	// Count is how many calls get the fault. Optional: 0 means 1.
	Count int `json:"count"`
}

type faultKind int

const (
	faultNone faultKind = iota
	faultError500
	faultLatency
	faultTimeoutAfterCommit
	faultDecline
)

// fault is a parsed Fault.Fault.
type fault struct {
	kind    faultKind
	latency time.Duration
}

func (f fault) String() string {
	switch f.kind {
	case faultError500:
		return "error_500"
	case faultLatency:
		return "latency:" + f.latency.String()
	case faultTimeoutAfterCommit:
		return "timeout_after_commit"
	case faultDecline:
		return "decline"
	}
	return "none"
}

// parseFault validates f; the messages say what is accepted, because the
// usual caller is a person writing a test.
func parseFault(f Fault) (fault, error) {
	switch f.Operation {
	case OperationPaymentIntentsCreate, OperationPaymentIntentsCancel, OperationRefundsCreate, OperationEmailsSend:
	default:
		return fault{}, fmt.Errorf("providersim: unknown fault operation %q: use %q, %q, %q or %q",
			f.Operation, OperationPaymentIntentsCreate, OperationPaymentIntentsCancel, OperationRefundsCreate, OperationEmailsSend)
	}
	if f.Count < 0 {
		return fault{}, fmt.Errorf("providersim: fault count %d is negative: use a positive count (0 means 1)", f.Count)
	}
	switch {
	case f.Fault == "error_500":
		return fault{kind: faultError500}, nil
	case f.Fault == "timeout_after_commit":
		return fault{kind: faultTimeoutAfterCommit}, nil
	case f.Fault == "decline":
		if f.Operation != OperationPaymentIntentsCreate {
			return fault{}, fmt.Errorf("providersim: fault decline applies only to %q, not %q", OperationPaymentIntentsCreate, f.Operation)
		}
		return fault{kind: faultDecline}, nil
	case strings.HasPrefix(f.Fault, "latency:"):
		d, err := time.ParseDuration(strings.TrimPrefix(f.Fault, "latency:"))
		if err != nil || d <= 0 {
			return fault{}, fmt.Errorf("providersim: fault %q: want latency:DURATION with a positive Go duration such as latency:2s", f.Fault)
		}
		return fault{kind: faultLatency, latency: d}, nil
	}
	return fault{}, fmt.Errorf("providersim: unknown fault %q: use error_500, latency:DURATION, timeout_after_commit or decline", f.Fault)
}

// queuedFault is a fault with the calls it has left.
type queuedFault struct {
	spec Fault
	f    fault
	left int
}

// faultQueue holds the pending faults, first injected first served, per
// operation. It lives in store, under the simulator's mutex.
type faultQueue struct {
	pending []*queuedFault
}

// take consumes one call's worth of the oldest pending fault of op.
func (q *faultQueue) take(op string) fault {
	for i, qf := range q.pending {
		if qf.spec.Operation != op {
			continue
		}
		qf.left--
		if qf.left == 0 {
			q.pending = append(q.pending[:i:i], q.pending[i+1:]...)
		}
		return qf.f
	}
	return fault{}
}

// InjectFault queues f for the next f.Count calls of f.Operation. Faults for
// the same operation are served in the order they were injected.
func (s *Simulator) InjectFault(f Fault) error {
	parsed, err := parseFault(f)
	if err != nil {
		return err
	}
	if f.Count == 0 {
		f.Count = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.faults.pending = append(s.st.faults.pending, &queuedFault{spec: f, f: parsed, left: f.Count})
	s.log.Info("providersim: fault queued", "operation", f.Operation, "fault", f.Fault, "count", f.Count)
	return nil
}

// Faults lists the faults still pending, with Count set to the calls each has
// left. A test can wait for it to drain to know that a call has taken its
// fault (and, for latency, holds its idempotency key in flight).
func (s *Simulator) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Fault, 0, len(s.st.faults.pending))
	for _, qf := range s.st.faults.pending {
		f := qf.spec
		f.Count = qf.left
		out = append(out, f)
	}
	return out
}

// ClearFaults drops every pending fault.
func (s *Simulator) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.faults.pending = nil
}

// faultList is the body of GET /_sim/faults.
type faultList struct {
	Faults []Fault `json:"faults"`
}

func (s *Simulator) serveFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, faultList{Faults: s.Faults()})
}

func (s *Simulator) serveInjectFault(w http.ResponseWriter, r *http.Request) {
	var f Fault
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		writeJSON(w, http.StatusBadRequest, simError{Error: "providersim: fault body: " + err.Error() +
			`: want {"operation": "...", "fault": "...", "count": N}`})
		return
	}
	if err := s.InjectFault(f); err != nil {
		writeJSON(w, http.StatusBadRequest, simError{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, faultList{Faults: s.Faults()})
}

func (s *Simulator) serveClearFaults(w http.ResponseWriter, _ *http.Request) {
	s.ClearFaults()
	writeJSON(w, http.StatusOK, faultList{Faults: []Fault{}})
}
