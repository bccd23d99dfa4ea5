package providersim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

	// WebhookURL is the endpoint the simulator delivers its Stripe webhook
	// events to (see webhooks.go), signed with WebhookSecret (whsec_...).
	// Optional: without it no event is made.
	WebhookURL    string
	WebhookSecret string
	// WebhookRetry is the delay before a failed delivery's first retry,
	// doubled at each later one up to WebhookRetryMax. Defaults to
	// [WebhookRetryDefault] (1s) and [WebhookRetryMaxDefault] (1h).
	WebhookRetry    time.Duration
	WebhookRetryMax time.Duration
	// WebhookAttempts is how many times a delivery is tried. Defaults to
	// [WebhookAttemptsDefault] (20).
	WebhookAttempts int
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

	webhookURL, webhookSecret     string
	webhookRetry, webhookRetryMax time.Duration
	webhookAttempts               int
	webhookClient                 *http.Client
	webhookKick                   chan struct{}
	webhooksDone                  chan struct{}

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
	s.webhookURL, s.webhookSecret = opts.WebhookURL, opts.WebhookSecret
	s.webhookRetry = cmp.Or(opts.WebhookRetry, WebhookRetryDefault)
	s.webhookRetryMax = cmp.Or(opts.WebhookRetryMax, WebhookRetryMaxDefault)
	s.webhookAttempts = cmp.Or(opts.WebhookAttempts, WebhookAttemptsDefault)
	s.webhookClient = &http.Client{Timeout: webhookTimeout}
	s.webhookKick = make(chan struct{}, 1)
	s.webhooksDone = make(chan struct{})
	if s.webhookURL != "" {
		go s.deliverWebhooks()
	} else {
		close(s.webhooksDone)
	}
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
			s.log.Error("providersim: serve failed", "error", err)
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
	<-s.webhooksDone
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

// Reset forgets every object, idempotency key and queued fault, as if the
// simulator had just been created. Requests in flight finish against the
// new, empty state.
func (s *Simulator) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = newStore()
}

// serveReset is POST /_sim/reset; see Reset.
func (s *Simulator) serveReset(w http.ResponseWriter, _ *http.Request) {
	s.Reset()
	s.log.Info("providersim: reset")
	writeJSON(w, http.StatusOK, map[string]bool{"reset": true})
}
