package orderhttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
)

// DefaultMaxBodyBytes is the default request body limit: a 100-line order is
// about 10 KiB of JSON.
const DefaultMaxBodyBytes = 64 << 10

// DB is what the API needs from the database: the commands' [orders.DB] and
// a ping for /healthz. *pgxpool.Pool satisfies it.
type DB interface {
	orders.DB
	Ping(ctx context.Context) error
}

// Config configures [New].
type Config struct {
	// DB is the order database. Mandatory.
	DB DB
	// Token, when set, is the bearer token the /orders routes and /metrics
	// require.
	// Optional: defaulted to no authentication.
	Token string
	// Logger receives one line per request and the server's errors.
	// Optional: defaulted to slog.Default().
	Logger *slog.Logger
	// Registry receives the API's metrics and is what /metrics serves.
	// Optional: defaulted to a new registry with the Go and process
	// collectors (a dedicated registry, so tests and embedders do not share
	// the global one).
	Registry *prometheus.Registry
	// MaxBodyBytes limits a request body. Optional: defaulted to
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Failpoints injects faults at orders.before_commit,
	// orders.after_commit and webhook.after_commit (committed, the answer
	// not yet written). Optional: nil injects none; cmd/orderapi passes
	// OUTFLOW_FAILPOINTS's.
	Failpoints *failpoints.Set
	// StripeWebhookSecret is the webhook endpoint's signing secret
	// (whsec_..., STRIPE_WEBHOOK_SECRET) POST /webhooks/stripe verifies
	// every event with. Optional: unset, the route answers 503 and takes
	// nothing.
	StripeWebhookSecret string
	// Inbox records the webhooks' Stripe event ids. Optional: defaulted to
	// an inbox counting its duplicates on Registry.
	Inbox *inbox.Inbox
	// Enqueuer writes the events of orders and webhooks (orders.WithEnqueuer).
	// Optional: nil is outbox.Enqueue, which writes where the database's
	// recorded relay source says.
	Enqueuer *outbox.Enqueuer
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
		c.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
}

func (c *Config) setInbox() error {
	if c.Inbox != nil {
		return nil
	}
	var err error
	c.Inbox, err = inbox.New(c.Registry)
	return err
}

func (c *Config) validate() error {
	if c.DB == nil {
		return errors.New("orderhttp: Config.DB is required: pass the *pgxpool.Pool from database.OpenChecked")
	}
	return nil
}

type server struct {
	cfg     Config
	metrics *metrics
	auth    *bearerAuth
}

// New returns the API's handler.
func New(cfg Config) (http.Handler, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.setInbox(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, metrics: m, auth: newBearerAuth(cfg.Token)}
	mux := http.NewServeMux()
	s.handle(mux, "POST /orders", true, s.createOrder)
	s.handle(mux, "POST /orders/{id}/cancel", true, s.cancelOrder)
	// Stripe cannot send the bearer token: the signature is the webhook's
	// authentication.
	s.handle(mux, "POST /webhooks/stripe", false, s.stripeWebhook)
	s.handle(mux, "GET /orders/{id}", true, s.getOrder)
	s.handle(mux, "GET /healthz", false, s.healthz)
	// /metrics sits on the public port (the contract's endpoint), so with a
	// token it wants the token too: a scraper sends it (Prometheus's
	// authorization.credentials_file). /healthz stays open for probes.
	s.handle(mux, "GET /metrics", true, promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry}).ServeHTTP)
	// A known path with another method is a JSON 405 naming the allowed one,
	// and everything else a JSON 404, rather than ServeMux's plain text.
	for path, allow := range map[string]string{
		"/orders": http.MethodPost, "/orders/{id}/cancel": http.MethodPost, "/orders/{id}": http.MethodGet,
		"/healthz": http.MethodGet, "/metrics": http.MethodGet, "/webhooks/stripe": http.MethodPost,
	} {
		s.handle(mux, path, false, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Code: codeMethodNotAllowed,
				Message: r.Method + " " + r.URL.Path + " is not supported; use " + allow})
		})
	}
	s.handle(mux, "/", false, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Code: codeNotFound, Message: "no such route: " + r.Method + " " + r.URL.Path})
	})
	return mux, nil
}

// handle registers h under pattern, wrapped (outermost first) in metrics and
// the access log, then authentication when the route needs it.
func (s *server) handle(mux *http.ServeMux, pattern string, needsAuth bool, h http.HandlerFunc) {
	var next http.Handler = h
	if needsAuth {
		next = s.auth.wrap(next)
	}
	mux.Handle(pattern, s.observe(pattern, next))
}

func (s *server) createOrder(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key, hasKey := idempotencyKey(r)
	if hasKey {
		if err := orders.ValidateIdempotencyKey(key); err != nil {
			writeError(w, &apiError{Status: http.StatusBadRequest, Code: codeInvalidIdemKey, Field: "Idempotency-Key",
				Message: "an Idempotency-Key has 1 to 255 printable ASCII characters; a UUID is a good choice"})
			return
		}
	}
	if e := checkJSONContentType(r.Header.Get("Content-Type")); e != nil {
		writeError(w, e)
		return
	}
	p, e := decodeCreateOrder(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if e != nil {
		writeError(w, e)
		return
	}
	// Validate before the database is touched: a rejected request writes nothing.
	if _, _, err := p.Validate(); err != nil {
		s.writeCommandError(w, r, err)
		return
	}
	if !hasKey {
		res, err := orders.CreateOrder(ctx, s.cfg.DB, p, orders.WithFailpoints(s.cfg.Failpoints), orders.WithEnqueuer(s.cfg.Enqueuer))
		if err != nil {
			s.writeCommandError(w, r, err)
			return
		}
		if !s.afterCommit(w, r) {
			return
		}
		writeJSON(w, http.StatusCreated, res)
		return
	}
	stored, err := orders.CreateOrderIdempotent(ctx, s.cfg.DB, key, p, orders.WithFailpoints(s.cfg.Failpoints), orders.WithEnqueuer(s.cfg.Enqueuer))
	if err != nil {
		s.writeCommandError(w, r, err)
		return
	}
	if stored.Replayed {
		s.metrics.replays.Inc()
		w.Header().Set("Idempotent-Replayed", "true")
	} else if !s.afterCommit(w, r) {
		return
	}
	writeRawJSON(w, stored.Status, stored.Body)
}

// idempotencyKey returns the Idempotency-Key header and whether it was sent
// at all (an empty header is sent, and invalid).
func idempotencyKey(r *http.Request) (string, bool) {
	v, ok := r.Header["Idempotency-Key"]
	if !ok {
		return "", false
	}
	if len(v) != 1 {
		return "", true // several keys: ambiguous, rejected as invalid
	}
	return v[0], true
}

func (s *server) cancelOrder(w http.ResponseWriter, r *http.Request) {
	id, ok := orderID(w, r)
	if !ok {
		return
	}
	res, err := orders.CancelOrder(r.Context(), s.cfg.DB, id, orders.WithFailpoints(s.cfg.Failpoints), orders.WithEnqueuer(s.cfg.Enqueuer))
	if err != nil {
		s.writeCommandError(w, r, err)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	} else if !s.afterCommit(w, r) {
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

func (s *server) getOrder(w http.ResponseWriter, r *http.Request) {
	id, ok := orderID(w, r)
	if !ok {
		return
	}
	o, err := orders.GetOrder(r.Context(), s.cfg.DB, id)
	if err != nil {
		s.writeCommandError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.DB.Ping(ctx); err != nil {
		s.cfg.Logger.WarnContext(ctx, "health check: database does not answer", "error", err)
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: codeDatabaseUnavailable, Message: "the database does not answer"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// orderID parses the {id} path segment, answering 400 itself when it is not
// a UUID (such an order cannot exist, but the client has a bug to fix).
func orderID(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		writeError(w, &apiError{Status: http.StatusBadRequest, Code: codeInvalidOrderID, Field: "id",
			Message: "an order id is the UUID returned as order_id by POST /orders"})
		return uuid.Nil, false
	}
	return id, true
}

// afterCommit runs the orders.after_commit failpoint: the change is
// committed, the response not yet written. An "error" action answers 500,
// which is what a client sees when a response is lost.
func (s *server) afterCommit(w http.ResponseWriter, r *http.Request) bool {
	if err := s.cfg.Failpoints.Inject(r.Context(), failpoints.OrdersAfterCommit); err != nil {
		s.writeCommandError(w, r, err)
		return false
	}
	return true
}

// writeCommandError maps a command's error to its response.
func (s *server) writeCommandError(w http.ResponseWriter, r *http.Request, err error) {
	var verr *orders.ValidationError
	switch {
	case errors.As(err, &verr):
		writeError(w, &apiError{Status: http.StatusUnprocessableEntity, Code: verr.Code, Field: verr.Field, Message: verr.Message})
	case errors.Is(err, orders.ErrIdempotencyKeyReused):
		writeError(w, &apiError{Status: http.StatusUnprocessableEntity, Code: codeIdempotencyKeyReused, Field: "Idempotency-Key",
			Message: "this Idempotency-Key was already used with a different request; use a new key for a new order"})
	case errors.Is(err, orders.ErrInvalidIdempotencyKey):
		writeError(w, &apiError{Status: http.StatusBadRequest, Code: codeInvalidIdemKey, Field: "Idempotency-Key", Message: err.Error()})
	case errors.Is(err, orders.ErrOrderNotFound):
		writeError(w, &apiError{Status: http.StatusNotFound, Code: codeOrderNotFound, Field: "id", Message: "no order has this id"})
	case errors.Is(err, orders.ErrCancelEventPurged):
		writeError(w, &apiError{Status: http.StatusConflict, Code: codeAlreadyCancelled,
			Message: "the order is cancelled; its cancel event is older than the retention period and no longer listed"})
	default:
		s.cfg.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, &apiError{Status: http.StatusInternalServerError, Code: codeInternal,
			Message: "the server could not complete the request; it is safe to retry with the same Idempotency-Key"})
	}
}
