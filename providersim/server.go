package providersim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configures a Simulator. The zero value is ready to use.
type Options struct {
	// Now is the simulator's clock: object creation times and the 24-hour
	// expiry of idempotency keys read it, so a test can advance time instead
	// of waiting. Optional: defaulted to time.Now. Fault latencies use real
	// time, because they delay real connections.
	Now func() time.Time

	// Logger receives one line per effect and per injected fault. Optional:
	// defaulted to a logger that discards everything, so tests stay quiet.
	Logger *slog.Logger
}

// Simulator is the in-memory Stripe-compatible payment API and
// Resend-compatible email API. All state sits behind one mutex, so an effect
// and the idempotency record that remembers it are committed together.
// A Simulator is safe for concurrent use.
type Simulator struct {
	now     func() time.Time
	clk     *clock
	log     *slog.Logger
	handler http.Handler

	mu sync.Mutex
	st *store

	// closing is closed by Close, so handlers that hold a connection open on
	// purpose (timeout_after_commit, latency) let go and Shutdown can finish.
	closing   chan struct{}
	closeOnce sync.Once

	srvMu  sync.Mutex
	srv    *http.Server
	served chan struct{}
}

// New returns a Simulator with empty state.
func New(opts Options) *Simulator {
	s := &Simulator{
		now:     opts.Now,
		log:     opts.Logger,
		st:      newStore(),
		closing: make(chan struct{}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.clk = &clock{base: s.now}
	s.now = s.clk.now
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.handler = s.routes()
	return s
}

// Handler returns the simulator's HTTP API, for mounting in an
// httptest.Server or another mux. Start serves the same handler.
func (s *Simulator) Handler() http.Handler { return s.handler }

// Start listens on addr ("127.0.0.1:0" for an ephemeral port) and serves
// until Close. It returns the base URL to give the clients, like
// "http://127.0.0.1:12345" (no trailing slash: stripe-go appends "/v1/...").
func (s *Simulator) Start(addr string) (baseURL string, err error) {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv != nil {
		return "", errors.New("providersim: Start called twice; create another Simulator for a second server")
	}
	select {
	case <-s.closing:
		return "", errors.New("providersim: Start after Close; create a new Simulator")
	default:
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("providersim: listen on %q: %w", addr, err)
	}
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("providersim: serve failed", "err", err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// Close stops the server started by Start, releasing connections that a
// fault holds open, and waits for every handler to return. It is safe to
// call more than once, and without Start (it then only releases handlers
// served through Handler by someone else's server).
func (s *Simulator) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.served
	return err
}

func (s *Simulator) routes() http.Handler {
	mux := http.NewServeMux()

	stripeAPI := func(h http.HandlerFunc) http.Handler { return s.stripeAuth(h) }
	mux.Handle("POST /v1/payment_intents", stripeAPI(s.createPaymentIntent))
	mux.Handle("GET /v1/payment_intents", stripeAPI(s.listPaymentIntents))
	mux.Handle("GET /v1/payment_intents/search", stripeAPI(s.searchPaymentIntents))
	mux.Handle("GET /v1/payment_intents/{id}", stripeAPI(s.retrievePaymentIntent))
	mux.Handle("POST /v1/refunds", stripeAPI(s.createRefund))
	mux.Handle("GET /v1/refunds", stripeAPI(s.listRefunds))
	mux.Handle("GET /v1/refunds/{id}", stripeAPI(s.retrieveRefund))
	// Everything else under /v1/ answers like Stripe does for an unknown
	// route, so a client calling an endpoint the simulator lacks gets a
	// Stripe error it can decode instead of a plain-text 404.
	mux.Handle("/v1/", stripeAPI(s.unknownStripeRoute))

	mux.Handle("POST /emails", s.resendAuth(http.HandlerFunc(s.sendEmail)))

	mux.HandleFunc("GET /_sim/ledger", s.serveLedger)
	mux.HandleFunc("GET /_sim/stats", s.serveStats)
	mux.HandleFunc("GET /_sim/faults", s.serveFaults)
	mux.HandleFunc("POST /_sim/faults", s.serveInjectFault)
	mux.HandleFunc("DELETE /_sim/faults", s.serveClearFaults)
	mux.HandleFunc("POST /_sim/reset", s.serveReset)
	mux.HandleFunc("GET /_sim/clock", s.serveClock)
	mux.HandleFunc("POST /_sim/clock", s.serveClock)
	mux.HandleFunc("GET /_sim/health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	return mux
}

// Reset forgets every object, idempotency key and queued fault, as if the
// simulator had just been created. Requests in flight finish against the
// new, empty state.
func (s *Simulator) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = newStore()
}

func (s *Simulator) serveReset(w http.ResponseWriter, _ *http.Request) {
	s.Reset()
	s.log.Info("providersim: reset")
	writeJSON(w, http.StatusOK, map[string]bool{"reset": true})
}

type apiKeyContextKey struct{}

// apiKeyFrom returns the caller's API key that the auth middleware checked.
// Idempotency keys are scoped by it.
func apiKeyFrom(r *http.Request) string {
	k, _ := r.Context().Value(apiKeyContextKey{}).(string)
	return k
}

// stripeAuth accepts any sk_test_ key, sent as a Bearer token or as the
// Basic-auth user name (curl -u sk_test_...:), the two forms Stripe accepts.
func (s *Simulator) stripeAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := ""
		if user, _, ok := r.BasicAuth(); ok {
			key = user
		} else if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			key = strings.TrimSpace(v)
		}
		switch {
		case key == "":
			s.writeStripe(w, r, stripeJSON(http.StatusUnauthorized, errorEnvelope{Error: &stripeError{
				Type: errorTypeInvalidRequest,
				Message: "You did not provide an API key. You need to provide your API key in the Authorization header, " +
					"using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication " +
					"for details, or we can help at https://support.stripe.com/.",
			}}))
			return
		case !strings.HasPrefix(key, "sk_test_") || len(key) == len("sk_test_"):
			// Live keys are refused on purpose: a process pointed at the
			// simulator must never look as if it could move real money.
			s.writeStripe(w, r, stripeJSON(http.StatusUnauthorized, errorEnvelope{Error: &stripeError{
				Type:    errorTypeInvalidRequest,
				Message: fmt.Sprintf("Invalid API Key provided: %s. The provider simulator accepts only test-mode secret keys (sk_test_...).", redactKey(key)),
			}}))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), apiKeyContextKey{}, key)))
	})
}

// resendAuth accepts any re_ key as a Bearer token, as Resend does.
func (s *Simulator) resendAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		key = strings.TrimSpace(key)
		switch {
		case !ok || key == "":
			writeResponse(w, resendError(http.StatusUnauthorized, "missing_api_key",
				"Missing API key in the authorization header. Include the following header 'Authorization: Bearer YOUR_API_KEY' in the request."))
			return
		case !strings.HasPrefix(key, "re_") || len(key) == len("re_"):
			writeResponse(w, resendError(http.StatusForbidden, "invalid_api_key", "API key is invalid"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), apiKeyContextKey{}, key)))
	})
}

func redactKey(key string) string {
	if len(key) <= 12 {
		return strings.Repeat("*", len(key))
	}
	return key[:8] + strings.Repeat("*", len(key)-12) + key[len(key)-4:]
}

func (s *Simulator) unknownStripeRoute(w http.ResponseWriter, r *http.Request) {
	s.writeStripe(w, r, stripeJSON(http.StatusNotFound, errorEnvelope{Error: &stripeError{
		Type: errorTypeInvalidRequest,
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s). The provider simulator implements only the endpoints "+
			"outflow's activities use; see package providersim.", r.Method, r.URL.Path),
	}}))
}

// writeStripe writes a Stripe API response with the headers stripe-go reads:
// Request-Id (kept on errors for support) and the echoed Idempotency-Key.
func (s *Simulator) writeStripe(w http.ResponseWriter, r *http.Request, resp response) {
	h := w.Header()
	if h.Get("Request-Id") == "" {
		h.Set("Request-Id", newID("req_"))
	}
	h.Set("Stripe-Version", stripeAPIVersion(r))
	if k := r.Header.Get("Idempotency-Key"); k != "" && r.Method == http.MethodPost {
		h.Set("Idempotency-Key", k)
	}
	writeResponse(w, resp)
}

// stripeAPIVersion echoes the version the client pinned; stripe-go v76 pins
// 2023-10-16, which is also the shape the simulator's objects follow.
func stripeAPIVersion(r *http.Request) string {
	if v := r.Header.Get("Stripe-Version"); v != "" {
		return v
	}
	return "2023-10-16"
}

// response is a complete HTTP answer, kept as bytes so that an idempotent
// replay can send exactly what the first request got.
type response struct {
	status int
	body   []byte
	header http.Header

	// requestID is the Request-Id the response was first sent with, repeated
	// as Original-Request when Stripe's layer replays it.
	requestID string
}

func writeResponse(w http.ResponseWriter, resp response) {
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

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
