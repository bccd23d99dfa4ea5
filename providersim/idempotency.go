package providersim

import (
	"fmt"
	"net/http"
	"time"
)

// idempotencyKeyLifetime is how long a key is remembered. Stripe prunes keys
// once they are at least 24 hours old, after which the same key starts a new
// request; Resend documents the same 24 hours. Activities must therefore keep
// their retries of one charge inside this window, or reconcile by search.
const idempotencyKeyLifetime = 24 * time.Hour

// idemScope identifies a key. Keys are scoped per API (the payment and the
// email API are different providers) and per API key, as Stripe scopes them
// per account and mode: two callers with different keys never collide.
type idemScope struct {
	api    string
	apiKey string
	key    string
}

// idemRecord is what the idempotency layer remembers about a key.
type idemRecord struct {
	endpoint    string // method and path of the first request
	fingerprint string // canonical parameters of the first request
	created     time.Time
	inFlight    bool     // the first request is still executing
	resp        response // the first response, once it is known
}

// idempotencyStore holds the live keys. It lives inside store, under the
// simulator's mutex, so that a key's record and the effect it protects are
// committed together.
type idempotencyStore struct {
	records   map[idemScope]*idemRecord
	lastSweep time.Time
}

func newIdempotencyStore() idempotencyStore {
	return idempotencyStore{records: map[idemScope]*idemRecord{}}
}

func expired(rec *idemRecord, now time.Time) bool {
	// A request still executing is never pruned, whatever the clock says:
	// its effect is not committed yet.
	return !rec.inFlight && now.Sub(rec.created) >= idempotencyKeyLifetime
}

// lookup returns the live record of a key, forgetting it if it has expired.
func (is *idempotencyStore) lookup(scope idemScope, now time.Time) *idemRecord {
	is.sweep(now)
	rec, ok := is.records[scope]
	if !ok {
		return nil
	}
	if expired(rec, now) {
		delete(is.records, scope)
		return nil
	}
	return rec
}

// sweep drops expired keys, at most once a minute of simulated time, so a
// long-running demo does not keep every key forever.
func (is *idempotencyStore) sweep(now time.Time) {
	if now.Sub(is.lastSweep) < time.Minute {
		return
	}
	is.lastSweep = now
	for scope, rec := range is.records {
		if expired(rec, now) {
			delete(is.records, scope)
		}
	}
}

// reserve records that a request with this key has started executing.
func (is *idempotencyStore) reserve(scope idemScope, endpoint, fingerprint string, now time.Time) *idemRecord {
	rec := &idemRecord{endpoint: endpoint, fingerprint: fingerprint, created: now, inFlight: true}
	is.records[scope] = rec
	return rec
}

// release forgets a reservation whose request never executed, so a retry
// with the same key runs normally.
func (is *idempotencyStore) release(scope idemScope, rec *idemRecord) {
	if is.records[scope] == rec {
		delete(is.records, scope)
	}
}

// call is one effectful POST as the idempotency layer sees it: by the time a
// handler builds it, the request has passed validation. Stripe saves nothing
// for a request that fails validation, so invalid requests never get here.
type call struct {
	operation   string // the fault operation, e.g. "payment_intents.create"
	proto       protocol
	scope       idemScope // scope.key == "": no Idempotency-Key was sent
	endpoint    string
	fingerprint string

	// execute performs the operation and renders its response. It runs with
	// the simulator's mutex held and must commit every effect to st before
	// returning; it may not block.
	execute func(st *store, now time.Time, f fault) response
}

// serveCall runs c with the provider's idempotency rules and the next
// injected fault of its operation:
//
//   - A new key is reserved (in flight) before the operation runs; the
//     response is stored together with the effect, errors included, because
//     the endpoint has begun executing (Stripe: "saves the status code and
//     body of the first request made with a given idempotency key after
//     endpoint execution begins").
//   - The same key with the same endpoint and parameters replays the stored
//     response verbatim and adds no effect.
//   - The same key with another endpoint or other parameters is an
//     idempotency error; a key whose first request is still executing is a
//     409. Neither is stored.
//
// Faults:
//
//   - error_500 answers a 500 and stores nothing, so a retry with the same
//     key executes normally. Stripe documents that it replays 500s that
//     happen once an endpoint has begun executing, and that it saves nothing
//     for a request that never began executing. The error_500 fault models
//     the second case — a failure in front of the endpoint, before anything
//     committed — so not storing it is Stripe's documented behaviour for
//     that case; the simulator has no fault for a 500 raised after execution
//     began (which Stripe would replay).
//   - latency:D delays the operation by D after the key is reserved, so a
//     concurrent retry sees the key in flight. A client that gives up during
//     the delay leaves nothing behind: the operation never ran and the key is
//     released.
//   - timeout_after_commit runs the operation, commits the effect and the
//     key's stored response, then never answers; the connection drops when
//     the client gives up or the simulator closes.
//   - decline is interpreted by execute (payment_intents.create only).
//
// Every call that reaches serveCall consumes one fault, replays included,
// so "the next N calls" means exactly that.
func (s *Simulator) serveCall(w http.ResponseWriter, r *http.Request, c call) {
	ctx := r.Context()
	requestID := newID("req_")
	log := s.log.With("operation", c.operation, "idempotency_key", c.scope.key, "request_id", requestID)

	s.mu.Lock()
	st := s.st
	f := st.faults.take(c.operation)
	if f.kind != faultNone {
		log.Info("providersim: injecting fault", "fault", f.String())
	}
	if f.kind == faultError500 {
		s.mu.Unlock()
		c.proto.write(w, r, c.proto.serverError(), false)
		return
	}
	now := s.now()
	var rec *idemRecord
	if c.scope.key != "" {
		if prev := st.idem.lookup(c.scope, now); prev != nil {
			resp, replay := c.proto.conflict(prev, c)
			if replay {
				st.stats.replays[c.operation]++
			} else {
				st.stats.rejected[c.operation]++
			}
			s.mu.Unlock()
			if replay {
				log.Info("providersim: idempotent replay", "status", resp.status)
				if f.kind == faultLatency && !s.wait(ctx, f.latency) {
					abortConnection()
				}
				if f.kind == faultTimeoutAfterCommit {
					s.hang(ctx)
				}
			} else {
				log.Info("providersim: idempotency key rejected", "status", resp.status)
			}
			c.proto.write(w, r, resp, replay)
			return
		}
		rec = st.idem.reserve(c.scope, c.endpoint, c.fingerprint, now)
	}
	s.mu.Unlock()

	if f.kind == faultLatency && !s.wait(ctx, f.latency) {
		if rec != nil {
			s.mu.Lock()
			st.idem.release(c.scope, rec)
			s.mu.Unlock()
		}
		log.Info("providersim: caller gave up during injected latency; nothing executed")
		abortConnection()
	}

	resp := s.execute(c, f, rec, requestID)
	log.Debug("providersim: executed", "status", resp.status)
	if f.kind == faultTimeoutAfterCommit {
		log.Info("providersim: committed; withholding the response until the caller gives up")
		s.hang(ctx)
	}
	c.proto.write(w, r, resp, false)
}

// execute runs c.execute and stores its response in the key's record in the
// same critical section as the effect.
func (s *Simulator) execute(c call, f fault, rec *idemRecord, requestID string) response {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := c.execute(s.st, s.now(), f)
	resp.requestID = requestID
	if rec != nil {
		rec.inFlight = false
		rec.resp = resp
	}
	return resp
}

// protocol is what differs between Stripe's and Resend's idempotency layers:
// the shape of their errors and of a replay.
type protocol interface {
	// conflict answers a request whose key is already known: a replay of the
	// stored response (replay true) or an idempotency error.
	conflict(prev *idemRecord, c call) (resp response, replay bool)
	serverError() response
	write(w http.ResponseWriter, r *http.Request, resp response, replayed bool)
}

// stripeProtocol follows https://docs.stripe.com/api/idempotent_requests.
type stripeProtocol struct{ s *Simulator }

func (p stripeProtocol) conflict(prev *idemRecord, c call) (response, bool) {
	key := c.scope.key
	switch {
	case prev.endpoint != c.endpoint:
		return (&stripeError{status: http.StatusBadRequest, Type: errorTypeIdempotency, Message: fmt.Sprintf(
			"Keys for idempotent requests can only be used for the same endpoint they were first used for ('%s' vs '%s'). "+
				"Try using a key other than '%s' if you meant to execute a different request.", prev.endpoint, c.endpoint, key)}).response(), false
	case prev.fingerprint != c.fingerprint:
		return (&stripeError{status: http.StatusBadRequest, Type: errorTypeIdempotency, Message: fmt.Sprintf(
			"Keys for idempotent requests can only be used with the same parameters they were first used with. "+
				"Try using a key other than '%s' if you meant to execute a different request.", key)}).response(), false
	case prev.inFlight:
		return (&stripeError{status: http.StatusConflict, Type: errorTypeIdempotency, Code: "idempotency_key_in_use", Message: fmt.Sprintf(
			"There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, "+
				"and the other request is still going through): %s. Please try again later.", key)}).response(), false
	}
	return prev.resp, true
}

func (stripeProtocol) serverError() response { return stripeServerError() }

func (p stripeProtocol) write(w http.ResponseWriter, r *http.Request, resp response, replayed bool) {
	switch {
	case replayed:
		w.Header().Set("Idempotent-Replayed", "true")
		if resp.requestID != "" {
			w.Header().Set("Original-Request", resp.requestID)
		}
	case resp.requestID != "":
		w.Header().Set("Request-Id", resp.requestID)
	}
	p.s.writeStripe(w, r, resp)
}

// resendProtocol follows Resend's idempotency keys: 409s named
// invalid_idempotent_request and concurrent_idempotent_requests, and the
// first response replayed.
type resendProtocol struct{}

func (resendProtocol) conflict(prev *idemRecord, c call) (response, bool) {
	switch {
	case prev.endpoint != c.endpoint || prev.fingerprint != c.fingerprint:
		return resendError(http.StatusConflict, "invalid_idempotent_request",
			"Same idempotency key used with a different request payload. Change your idempotency key or payload."), false
	case prev.inFlight:
		return resendError(http.StatusConflict, "concurrent_idempotent_requests",
			"Same idempotency key used while original request is still in progress. Try the request again later."), false
	}
	return prev.resp, true
}

func (resendProtocol) serverError() response {
	return resendError(http.StatusInternalServerError, "internal_server_error",
		"An unexpected error occurred (injected by the provider simulator: error_500).")
}

func (resendProtocol) write(w http.ResponseWriter, _ *http.Request, resp response, replayed bool) {
	if replayed {
		// Resend replays the first response; the header is the simulator's
		// addition (borrowed from Stripe) so a test can tell a replay apart.
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeResponse(w, resp)
}
