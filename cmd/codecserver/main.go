// Command codecserver serves Temporal's codec server protocol for outflow's
// encrypted payloads, so that `temporal workflow show --codec-endpoint` and
// the Temporal Web UI show histories decoded, to whoever may read them,
// while Temporal itself only ever stores ciphertext (docs/privacy.md).
//
//	OUTFLOW_CODEC_KEYS=... DATABASE_URL=... go run ./cmd/codecserver
//	temporal workflow show -w EVENT_ID --codec-endpoint http://127.0.0.1:8081 --codec-auth "Bearer $CODECSERVER_TOKEN"
//	temporal server start-dev --ui-codec-endpoint http://127.0.0.1:8081   # the Web UI decodes through it
//
// Environment:
//
//	CODECSERVER_ADDR         listen address; default 127.0.0.1:8081
//	CODECSERVER_TOKEN        when set, every /encode and /decode needs "Authorization: Bearer <token>"
//	CODECSERVER_CORS_ORIGIN  the Web UI's origin (e.g. http://127.0.0.1:8233), allowed from the browser
//	CODECSERVER_ALLOWED_HOSTS the Host headers it answers, comma-separated "host:port" or "host";
//	                         default the listen address (on loopback or all interfaces: localhost,
//	                         127.0.0.1 and [::1] on its port)
//	OUTFLOW_CODEC_KEYS       the master keys, as for the worker (or OUTFLOW_CODEC_KEYS_FILE); required
//	DATABASE_URL             the customer keys (customer_keys); default the local server
//	OUTFLOW_LOG_LEVEL, OUTFLOW_LOG_FORMAT
//
// POST <any path>/decode and <any path>/encode take and return a Payloads
// message as protobuf JSON (the SDK's converter.NewPayloadCodecHTTPHandler);
// GET /healthz answers "ok" without authentication. A request for another
// Host, from a browser page of another origin than the Web UI's, or with a
// body that is not application/json is refused (403, 415): without a token,
// that is what keeps a web page the operator visits from reading decoded
// data (docs/privacy.md). A payload of a
// forgotten customer is returned still encrypted; a payload under a key this
// server does not hold fails the request, naming the key. It logs one line,
// "listening", with its address once it serves. SIGINT or SIGTERM shuts it
// down gracefully. `codecserver -h` lists the variables, `--version` prints
// the build; a missing or malformed setting is exit status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/service"
)

// Environment variables and defaults (docs/reference.md).
const (
	AddrEnv       = "CODECSERVER_ADDR"
	TokenEnv      = "CODECSERVER_TOKEN"
	CORSOriginEnv = "CODECSERVER_CORS_ORIGIN"
	DefaultAddr   = "127.0.0.1:8081"
)

// command is what `codecserver -h` shows: every variable it reads.
var command = cli.Command{
	Name:    "codecserver",
	Summary: "serves Temporal's codec server protocol for outflow's encrypted payloads (temporal --codec-endpoint, the Web UI), until SIGINT or SIGTERM.",
	Env: cli.Vars(
		[]cli.Var{
			{Name: AddrEnv, Default: DefaultAddr, Meaning: "listen address, host:port"},
			{Name: TokenEnv, Default: "none", Meaning: `when set, every /encode and /decode needs "Authorization: Bearer <token>"`},
			{Name: CORSOriginEnv, Default: "none", Meaning: "the Web UI's origin (e.g. http://127.0.0.1:8233), allowed from the browser"},
			{Name: codec.HostsEnv, Default: "the listen address (loopback names on its port)", Meaning: `the Host headers it answers, comma-separated "host:port" or "host"`},
			{Name: codec.KeysEnv, Default: "none: required", Meaning: "the master keys, as for the worker: comma-separated KEY_ID:BASE64_32_BYTES"},
			{Name: codec.KeysFileEnv, Meaning: "a file holding those keys instead, one a line"},
			service.DatabaseVar(database.DefaultURL, "the customer keys (customer_keys)"),
		},
		service.LogVars(),
	),
	Notes: "A malformed or missing setting stops it at start (exit status 2). See docs/privacy.md.",
}

func main() {
	if err := command.Parse(flag.NewFlagSet("codecserver", flag.ContinueOnError), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(cli.ExitCode(err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stderr, nil)
	stop()
	os.Exit(cli.Report(os.Stderr, "codecserver", err))
}

// run serves until ctx ends; ready, when set, receives the bound address.
func run(ctx context.Context, getenv func(string) string, logOut io.Writer, ready chan<- string) error {
	env := service.NewEnv(getenv)
	logger := service.NewLogger(logOut, env)
	addr := env.String(AddrEnv, DefaultAddr)
	token, origin := getenv(TokenEnv), getenv(CORSOriginEnv)
	var allowed []string
	for _, h := range strings.Split(getenv(codec.HostsEnv), ",") {
		if h = strings.TrimSpace(h); h != "" {
			allowed = append(allowed, h)
		}
	}
	if err := env.Err(); err != nil {
		return err
	}
	keys, err := codec.LoadKeys(getenv)
	if err != nil {
		return cli.Config(err)
	}
	if keys == nil {
		return cli.Config(fmt.Errorf("%s (or %s) is not set: the codec server needs the master keys the worker and the relay encrypt with", codec.KeysEnv, codec.KeysFileEnv))
	}
	url := getenv("DATABASE_URL")
	if url == "" {
		url = database.DefaultURL
	}
	pool, err := database.OpenChecked(ctx, url)
	if err != nil {
		return fmt.Errorf("%w (the codec server reads the customer keys there)", err)
	}
	defer pool.Close()

	if err := codec.CheckCustomerKeys(ctx, pool, keys); err != nil {
		return err
	}
	dc := codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(pool)})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", AddrEnv, addr, err)
	}
	if allowed == nil {
		allowed = defaultHosts(addr, l.Addr())
	}
	handler := codec.NewHTTPHandler(dc.DisplayCodecs(), codec.ServerOptions{Token: token, CORSOrigin: origin, AllowedHosts: allowed})
	srv := &http.Server{Handler: logRequests(handler, logger), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	auth := "none (set " + TokenEnv + ")"
	if token != "" {
		auth = "bearer token"
	}
	logger.Info("listening", "addr", l.Addr().String(), "endpoint", "http://"+l.Addr().String(),
		"auth", auth, "cors_origin", origin, "allowed_hosts", strings.Join(allowed, ","), "keys", keys.String())
	if ready != nil {
		ready <- l.Addr().String()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// defaultHosts are the Host headers a server listening on configured
// (bound to bound) answers when CODECSERVER_ALLOWED_HOSTS is unset: on a
// loopback or wildcard address the loopback names on its port, else the
// address itself, and the configured name if it is one.
func defaultHosts(configured string, bound net.Addr) []string {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return codec.LoopbackHosts("")
	}
	port := strconv.Itoa(tcp.Port)
	if tcp.IP.IsLoopback() || tcp.IP.IsUnspecified() {
		return codec.LoopbackHosts(port)
	}
	hosts := []string{net.JoinHostPort(tcp.IP.String(), port)}
	if h, _, err := net.SplitHostPort(configured); err == nil && h != "" && net.ParseIP(h) == nil {
		hosts = append(hosts, net.JoinHostPort(h, port))
	}
	return hosts
}

// logRequests logs every failed request (never a payload) at warn, and
// every request at debug.
func logRequests(next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		level := slog.LevelDebug
		if sw.status >= 400 {
			level = slog.LevelWarn
		}
		logger.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"namespace", r.Header.Get("X-Namespace"), "took", time.Since(start).Round(time.Microsecond))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
