package cli_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// helpNames are, for every binary of the module, variables its -h must
// list. A binary missing here fails the test: a new one answers -h too.
var helpNames = map[string][]string{
	"starter":     {"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "OUTFLOW_TASK_QUEUE", "OUTFLOW_ROUTES", "OUTFLOW_RELAY_SOURCE", "OUTFLOW_RELAY_RATE", "OUTFLOW_SINKS", "OUTFLOW_NATS_URL", "OUTFLOW_NATS_STREAM", "OUTFLOW_NATS_SUBJECT_PREFIX", "OUTFLOW_RETENTION", "METRICS_ADDR", "OUTFLOW_FAILPOINTS", "OUTFLOW_CODEC_KEYS", "OUTFLOW_LOG_LEVEL"},
	"worker":      {"DATABASE_URL", "TEMPORAL_ADDRESS", "OUTFLOW_TASK_QUEUE", "STRIPE_API_KEY", "STRIPE_API_BASE", "EMAIL_API_KEY", "EMAIL_API_BASE", "EMAIL_FROM", "METRICS_ADDR", "OUTFLOW_CODEC_KEYS"},
	"orderapi":    {"DATABASE_URL", "ORDERAPI_ADDR", "ORDERAPI_TOKEN", "OUTFLOW_FAILPOINTS", "OUTFLOW_LOG_FORMAT"},
	"codecserver": {"CODECSERVER_ADDR", "CODECSERVER_TOKEN", "CODECSERVER_CORS_ORIGIN", "CODECSERVER_ALLOWED_HOSTS", "OUTFLOW_CODEC_KEYS", "DATABASE_URL"},
	"providersim": {"PROVIDERSIM_ADDR", "OUTFLOW_LOG_LEVEL"},
	"outboxctl":   {"DATABASE_URL", "TEMPORAL_ADDRESS", "OUTFLOW_CDC_SLOT", "OUTFLOW_LOG_LEVEL", "OUTFLOW_CONSOLE_ADDR", "OUTFLOW_CONSOLE_TOKEN"},
	"demo":        {"DEMO_EXIT", "OUTFLOW_RELAY_SOURCE", "DATABASE_URL", "TEMPORAL_ADDRESS", "CODECSERVER_ADDR"},
	"bench":       {"DATABASE_URL", "TEMPORAL_ADDRESS", "OUTFLOW_RELAY_SOURCE"},
	"cluster":     {"DATABASE_URL", "OUTFLOW_TEMPORAL_SERVER"},
	"healthcheck": {}, // reads no environment: its URL is its argument
	"orderfeed":   {"DATABASE_URL", "OUTFLOW_NATS_URL", "OUTFLOW_NATS_STREAM", "OUTFLOW_NATS_SUBJECT_PREFIX", "OUTFLOW_CODEC_KEYS", "OUTFLOW_CODEC_DATABASE_URL", "OUTFLOW_FAILPOINTS", "OUTFLOW_LOG_LEVEL"},
	"inventory":   {"INVENTORY_DATABASE_URL", "INVENTORY_ADDR", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "INVENTORY_SIGNAL", "INVENTORY_SAGA_WORKFLOW", "METRICS_ADDR", "OUTFLOW_RETENTION", "OUTFLOW_FAILPOINTS"},
}

// singleDashLong is a flag longer than one letter written with one dash
// (-database-url) at the start of a help line or after a space or
// backquote: help writes --database-url (cmdkit.PrintFlags).
var singleDashLong = regexp.MustCompile("(?m)(^|[ `\\[(])-[a-z][a-z0-9]+(-[a-z0-9]+)*\\b")

// TestEveryBinaryAnswersHelpAndVersion builds every main package of the
// module (with VCS stamping) and runs each with -h, --version and an
// unknown flag, its whole environment pointing at a listener of the test
// with a password in DATABASE_URL: -h exits 0 and lists the binary's
// variables, --version names the revision, the unknown flag exits 2, none
// prints the password, and nothing ever connects to the listener.
func TestEveryBinaryAnswersHelpAndVersion(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The module's own: the pattern also matches the library's
	// (outbox/cmd/outboxctl, whose name is the root's outboxctl's; the
	// library's tests and embedtest's install test check it).
	list := exec.CommandContext(ctx, "go", "list", "-f", `{{if and (eq .Name "main") (eq .Module.Path "github.com/outflow/outflow")}}{{.ImportPath}}{{end}}`, "github.com/outflow/outflow/...")
	out, err := list.Output()
	require.NoError(t, err)
	pkgs := strings.Fields(string(out))
	require.NotEmpty(t, pkgs)
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-buildvcs=true", "-o", dir + string(os.PathSeparator)}, pkgs...)...)
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s", b)

	// A listener in place of PostgreSQL, Temporal and the providers: any
	// connection is a binary that dialled when it should only have talked.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	var dialled atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dialled.Add(1)
			c.Close()
		}
	}()
	addr := l.Addr().String()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"DATABASE_URL=postgres://outflow:s3cret-pw@" + addr + "/outflow?sslmode=disable",
		"TEMPORAL_ADDRESS=" + addr, "STRIPE_API_BASE=http://" + addr, "EMAIL_API_BASE=http://" + addr,
		"ORDERAPI_ADDR=" + addr, "CODECSERVER_ADDR=" + addr, "PROVIDERSIM_ADDR=" + addr, "METRICS_ADDR=" + addr,
		"INVENTORY_DATABASE_URL=postgres://outflow:s3cret-pw@" + addr + "/inventory?sslmode=disable", "INVENTORY_ADDR=" + addr,
	}
	run := func(bin string, args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var o, e bytes.Buffer
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &o, &e
		err := cmd.Run()
		require.NoError(t, cctx.Err(), "%s %v did not exit at once", bin, args)
		if err != nil {
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s %v", bin, args)
			code = exit.ExitCode()
		}
		return code, o.String(), e.String()
	}

	// The go command stamps the revision only where .git is a directory: in
	// a clone, not in a git worktree (.git a file) or an unpacked tarball.
	// There the line must still say that the revision is unknown, and why.
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err)
	revision := regexp.MustCompile(`(?m)^revision unknown \(built without VCS stamping`)
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(root)), ".git")); err == nil && fi.IsDir() {
		head, err := exec.CommandContext(ctx, "git", "-C", strings.TrimSpace(string(root)), "rev-parse", "HEAD").Output()
		require.NoError(t, err)
		revision = regexp.MustCompile(`(?m)^revision ` + strings.TrimSpace(string(head)) + `\b`)
	} else {
		t.Logf("%s/.git is not a directory (a git worktree?): the go command stamps no revision here", strings.TrimSpace(string(root)))
	}
	for _, pkg := range pkgs {
		name := filepath.Base(pkg)
		bin := filepath.Join(dir, name)
		want, ok := helpNames[name]
		require.True(t, ok, "binary %s (%s) is missing from helpNames: list the variables its -h must show", name, pkg)

		for _, arg := range []string{"-h", "--help"} {
			code, stdout, stderr := run(bin, arg)
			require.Zero(t, code, "%s %s\nstdout: %s\nstderr: %s", name, arg, stdout, stderr)
			require.Contains(t, stdout, "environment:", "%s %s", name, arg)
			for _, v := range want {
				require.Contains(t, stdout, "\n  "+v, "%s %s lists %s", name, arg, v)
			}
			require.NotContains(t, stdout+stderr, "s3cret-pw", "%s %s", name, arg)
			require.NotRegexp(t, singleDashLong, stdout, "%s %s writes its flags --name", name, arg)
		}

		code, stdout, stderr := run(bin, "--version")
		require.Zero(t, code, "%s --version: %s", name, stderr)
		require.Regexp(t, revision, stdout, "%s --version", name)
		require.True(t, strings.HasPrefix(stdout, name+" github.com/outflow/outflow "), "%s --version: %s", name, stdout)

		code, _, stderr = run(bin, "--no-such-flag")
		require.Equal(t, 2, code, "%s --no-such-flag: %s", name, stderr)
		require.NotContains(t, stderr, "s3cret-pw", name)
	}

	// outboxctl's subcommands: their -h masks the password of their
	// --database-url default.
	ctl := filepath.Join(dir, "outboxctl")
	for _, args := range [][]string{{"help", "status"}, {"list", "-h"}, {"show", "--help"}} {
		code, stdout, stderr := run(ctl, args...)
		require.Zero(t, code, "outboxctl %v: %s", args, stderr)
		require.Contains(t, stdout, "postgres://outflow:xxxxx@"+addr, "outboxctl %v", args)
		require.NotContains(t, stdout+stderr, "s3cret-pw", "outboxctl %v", args)
		require.NotRegexp(t, singleDashLong, stdout, "outboxctl %v writes its flags --name", args)
	}
	code, _, stderr := run(ctl, "status", "--no-such-flag")
	require.Equal(t, 2, code)
	require.NotContains(t, stderr, "s3cret-pw")

	require.Zero(t, dialled.Load(), "a binary connected to the database, Temporal or a provider while answering -h, --version or a bad flag")
}
