package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// LaunchOptions configures a dev server run as a supervised child process
// ([Launch]): the test suites' server, which a test stops and starts again on
// the same file and port, and the demo's, with its Web UI.
type LaunchOptions struct {
	// Options are the server's: DBFile, Port, LogLevel and DynamicConfig
	// (Output is not used: the output goes to LogFile).
	Options
	// CLI is the Temporal CLI. Optional: defaulted to [CLIPath].
	CLI string
	// UIPort serves the Web UI on this port of 127.0.0.1. Optional: 0
	// runs the server headless.
	UIPort int
	// UICodecEndpoint is the codec server the Web UI decodes payloads
	// through. Optional; only with UIPort.
	UICodecEndpoint string
	// LogFile receives the server's output, appended after a start banner
	// (see outbox/outboxtest/dev/proc), or created afresh with TruncateLog.
	LogFile     string
	TruncateLog bool
	// Env is the server's whole environment. Optional: defaulted to this
	// process's.
	Env []string
	// Ready bounds the wait until the frontend answers health checks.
	// Optional: defaulted to 90s.
	Ready time.Duration
}

// Process is a dev server started by [Launch]: a [proc.Process] (Stop,
// Kill, LogTail, LogPath) with its addresses.
type Process struct {
	*proc.Process
	addr  string
	uiURL string
}

// Address is the frontend's host:port.
func (p *Process) Address() string { return p.addr }

// UIURL is the Web UI's address, "" when headless.
func (p *Process) UIURL() string { return p.uiURL }

// Launch starts a dev server under outbox/outboxtest/dev/proc and waits until its
// frontend answers health checks; when it does not, Launch stops it and
// returns an error with the last lines of its log. The caller stops it.
func Launch(ctx context.Context, o LaunchOptions) (*Process, error) {
	cli := o.CLI
	if cli == "" {
		var err error
		if cli, err = CLIPath(); err != nil {
			return nil, err
		}
	}
	if o.Port == 0 {
		var err error
		if o.Port, err = ports.Free(); err != nil {
			return nil, err
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port))
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(o.Port)}
	uiURL := ""
	if o.UIPort == 0 {
		args = append(args, "--headless")
	} else {
		args = append(args, "--ui-port", strconv.Itoa(o.UIPort))
		uiURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(o.UIPort))
		if o.UICodecEndpoint != "" {
			args = append(args, "--ui-codec-endpoint", o.UICodecEndpoint)
		}
	}
	if o.DBFile != "" {
		args = append(args, "--db-filename", o.DBFile)
	}
	args = append(args, "--log-level", logLevel(o.Options))
	args = append(args, serverFlags(o.Options)...)
	p, err := proc.Start(proc.Options{Name: "temporal", Bin: cli, Args: args, Env: o.Env, LogPath: o.LogFile, Truncate: o.TruncateLog})
	if err != nil {
		return nil, err
	}
	ready := o.Ready
	if ready == 0 {
		ready = 90 * time.Second
	}
	err = ports.Poll(ctx, "temporal dev server on "+addr, ready, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return true, errors.New("exited during start-up")
		}
		c, err := client.Dial(client.Options{HostPort: addr, Logger: QuietLogger()})
		if err != nil {
			return false, err
		}
		defer c.Close()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err == nil, err
	})
	if err != nil {
		p.Stop(5 * time.Second)
		return nil, fmt.Errorf("devserver: %w (see %s)\n%s", err, p.LogPath(), p.LogTail(30))
	}
	return &Process{Process: p, addr: addr, uiURL: uiURL}, nil
}

// OrderIDAttribute is the Keyword search attribute every dev server
// registers: the order app's (handoff.SearchAttributeOrderID, which a test
// of package handoff holds equal) and the one the library's tests route by.
const OrderIDAttribute = "OrderId"

// serverFlags are the start-dev flags every dev server of the repository
// runs with, whoever launches it: the OrderId search attribute, SQLite in
// WAL mode, and the caller's dynamic config.
func serverFlags(o Options) []string {
	flags := []string{
		"--search-attribute", OrderIDAttribute + "=Keyword",
		// WAL roughly doubles the start rate of workflows on SQLite.
		"--sqlite-pragma", "journal_mode=WAL",
		"--sqlite-pragma", "synchronous=NORMAL",
	}
	for _, k := range slices.Sorted(maps.Keys(o.DynamicConfig)) {
		flags = append(flags, "--dynamic-config-value", k+"="+o.DynamicConfig[k])
	}
	return flags
}

// logLevel is o.LogLevel, defaulted to "warn".
func logLevel(o Options) string {
	if o.LogLevel == "" {
		return "warn"
	}
	return o.LogLevel
}

// QuietLogger is an SDK logger that drops everything, for clients whose
// callers report progress their own way.
func QuietLogger() log.Logger { return log.NewStructuredLogger(slog.New(slog.DiscardHandler)) }
