package ctl

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/hostcheck"
)

// Variables of `outboxctl serve`.
const (
	// ConsoleAddrVar is where serve listens, host:port.
	ConsoleAddrVar = "OUTFLOW_CONSOLE_ADDR"
	// ConsoleTokenVar is the operator token that allows the console's
	// actions; without it the console is read-only.
	ConsoleTokenVar = "OUTFLOW_CONSOLE_TOKEN"
)

// DefaultConsoleAddr is where serve listens without OUTFLOW_CONSOLE_ADDR:
// loopback only.
const DefaultConsoleAddr = "127.0.0.1:8099"

//go:embed console
var consoleFiles embed.FS

// consoleTemplates are the console's pages, each "layout" around its
// "content".
var consoleTemplates = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"ago":  func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
		"when": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"dur":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
		"secs": func(s float64) string {
			return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
		},
		"short": func(s string) string { return strings.TrimPrefix(lastError(s), "last_error=") },
	}
	pages := map[string]*template.Template{}
	names, err := fs.Glob(consoleFiles, "console/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		if n == "console/layout.html" {
			continue
		}
		page := strings.TrimSuffix(strings.TrimPrefix(n, "console/"), ".html")
		pages[page] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(consoleFiles, "console/layout.html", n))
	}
	return pages
}()

// ConsoleOptions configures [NewConsole]. All fields are optional.
type ConsoleOptions struct {
	// Token is the operator token (OUTFLOW_CONSOLE_TOKEN): a request that
	// presents it (Authorization: Bearer, or the login form's cookie) may
	// act and see payloads. Empty: the console is read-only for everyone.
	Token string
	// AllowedHosts are the Host headers the console answers: "host:port",
	// or "host" for any port. Defaulted to the listen address's and, on
	// loopback, the loopback names on its port (Addr).
	AllowedHosts []string
	// Addr is the listen address the default AllowedHosts derive from.
	Addr string
	// TemporalUI is the Temporal Web UI's base URL: an event's page links
	// its workflow there. Empty: no link.
	TemporalUI string
	// Namespace is the Temporal namespace of the links. Defaulted to
	// "default".
	Namespace string
	// Traces is the trace viewer's base URL (Jaeger): an event's page links
	// <Traces>/trace/<trace id> when its row recorded a trace. Empty: no link.
	Traces string
	// CDCSlot is the cdc source's replication slot the overview reports on.
	// Defaulted to outboxops.CDCSlotDefault.
	CDCSlot string
	// PageSize is the events a list page shows. Defaulted to 50.
	PageSize int
	// Personal reports whether an event's payload holds personal data:
	// such a payload is shown only to a token holder, the rule a codec
	// server keeps for what it decodes, and any other payload to every
	// visitor. The order app's outboxctl says a payload is personal when
	// its payload codec would encrypt it with a customer's key (it names a
	// customer_email, or any email address). Nil: every payload is
	// personal.
	Personal func(eventType string, payload []byte) bool
}

// Console is the outbox's web page: an http.Handler over the operator API
// (outboxops), as `outboxctl serve` serves it. Without a token it is
// read-only: its pages are GETs that change nothing, and every action (a
// POST) needs the token and a CSRF token of the session, from the
// console's own origin.
type Console struct {
	env  *Env
	db   *pgxpool.Pool
	opts ConsoleOptions
	// key signs sessions' CSRF tokens and the login cookie; it is new in
	// every process, so a restart signs everyone out.
	key []byte
	mux *http.ServeMux
}

// NewConsole returns the console over db, acting as env's commands do
// (env's App hooks: the skip's settlement; env's logger logs every action).
func NewConsole(env *Env, db *pgxpool.Pool, opts ConsoleOptions) (*Console, error) {
	opts.Namespace = cmp.Or(opts.Namespace, "default")
	opts.PageSize = cmp.Or(opts.PageSize, 50)
	if opts.PageSize < 1 || opts.PageSize > 1000 {
		return nil, fmt.Errorf("console: page size %d is out of range; use 1 to 1000", opts.PageSize)
	}
	if len(opts.AllowedHosts) == 0 {
		hosts, err := defaultHosts(cmp.Or(opts.Addr, DefaultConsoleAddr))
		if err != nil {
			return nil, err
		}
		opts.AllowedHosts = hosts
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	key, err := randomBytes(32)
	if err != nil {
		return nil, err
	}
	c := &Console{env: env, db: db, opts: opts, key: key, mux: http.NewServeMux()}
	c.routes()
	return c, nil
}

// defaultHosts are the Host names of a console listening on addr: the
// address itself and, on a loopback or unspecified address, the loopback
// names on its port.
func defaultHosts(addr string) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("console: %s=%q: want host:port, e.g. %s (%v)", ConsoleAddrVar, addr, DefaultConsoleAddr, err)
	}
	hosts := []string{addr}
	if ip := net.ParseIP(host); host == "" || host == "localhost" || (ip != nil && (ip.IsLoopback() || ip.IsUnspecified())) {
		hosts = append(hosts, hostcheck.Loopback(port)...)
	}
	return hosts, nil
}

// runServe serves the console until the command's context ends.
func runServe(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "serve", "serve [--addr HOST:PORT] [--temporal-ui URL] [--traces URL] [--allowed-hosts H,H]\n\n"+
		"The outbox's page: overview, pending/held/quarantined/skipped lists, one event, and actions\n"+
		"(retry, retry quarantined, skip, replay), each showing its plan (the CLI's) before it acts.\n"+
		"Read-only unless "+ConsoleTokenVar+" is set and presented: as `Authorization: Bearer TOKEN`,\n"+
		"or through the login form (an HttpOnly, SameSite=Strict cookie). A payload with personal data\n"+
		"is shown only to a token holder (the library's outboxctl treats every payload so). Every action is a POST with the session's CSRF token from the console's own\n"+
		"origin, recorded with actor console/<identity>: X-Forwarded-User when a reverse proxy sends it\n"+
		"with the token (the proxy injects the bearer token and asserts the user), else $USER@hostname.")
	addr := fs.String("addr", cmp.Or(env.getenv(ConsoleAddrVar), DefaultConsoleAddr), "listen `HOST:PORT`; defaulted to "+ConsoleAddrVar+" when set")
	var opts ConsoleOptions
	fs.StringVar(&opts.TemporalUI, "temporal-ui", "", "Temporal Web UI base `URL` (e.g. http://127.0.0.1:8233): an event links its workflow there")
	fs.StringVar(&opts.Traces, "traces", "", "trace viewer base `URL` (Jaeger, e.g. http://127.0.0.1:16686): an event links <URL>/trace/<id>")
	hosts := fs.String("allowed-hosts", "", "comma-separated Host names the console answers (host or host:port), e.g. the reverse proxy's; default the listen address and, on loopback, the loopback names")
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return Usagef(fs, "serve takes no arguments, got %q", pos)
	}
	opts.Addr = *addr
	opts.Token = env.getenv(ConsoleTokenVar)
	opts.CDCSlot = env.getenv(CDCSlotVar)
	if env.app != nil {
		opts.Personal = env.app.Personal
	}
	if *hosts != "" {
		opts.AllowedHosts = strings.Split(*hosts, ",")
	}
	if o, err := env.TemporalOptions(); err == nil {
		opts.Namespace = o.Namespace
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()
	c, err := NewConsole(env, pool, opts)
	if err != nil {
		return &ConfigError{Err: err}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("console: listen on %s (%s): %w", *addr, ConsoleAddrVar, err)
	}
	mode := "read-only (" + ConsoleTokenVar + " is not set)"
	if opts.Token != "" {
		mode = "actions need the token " + ConsoleTokenVar
	}
	fmt.Fprintf(env.Stdout, "outbox console on http://%s (%s)\n", ln.Addr(), mode)
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
