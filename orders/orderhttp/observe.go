package orderhttp

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/promreg"
)

// metrics are the API's Prometheus series.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	replays  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderapi_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orderapi_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orderapi_idempotent_replays_total",
			Help: "POST /orders requests answered from a stored Idempotency-Key response.",
		}),
	}
	var err error
	if m.requests, err = promreg.Register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.duration, err = promreg.Register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.replays, err = promreg.Register(reg, m.replays); err != nil {
		return nil, err
	}
	return m, nil
}

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe counts, times and logs every request of route. The route pattern,
// not the path, is the label, so order ids do not explode the series.
func (s *server) observe(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
		s.metrics.duration.WithLabelValues(route).Observe(elapsed.Seconds())
		level := slog.LevelInfo
		if rec.status >= 500 {
			level = slog.LevelError
		}
		s.cfg.Logger.LogAttrs(r.Context(), level, "http request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("route", route),
			slog.Int("status", rec.status),
			slog.Int("bytes", rec.bytes),
			slog.Duration("duration", elapsed),
			slog.String("remote", r.RemoteAddr),
		)
	})
}
