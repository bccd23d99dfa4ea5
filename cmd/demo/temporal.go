package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/internal/dev/ports"
	"github.com/outflow/outflow/internal/dev/proc"
)

// temporalServer is the Temporal frontend the demo runs against.
type temporalServer struct {
	address   string
	namespace string
	uiURL     string // empty when unknown (an external cluster)
	how       string
	proc      *proc.Process
	cli       string // the Temporal CLI to print in commands
}

// ensureTemporal reuses TEMPORAL_ADDRESS, else builds the Temporal CLI from
// the tools module and starts a dev server persisting to dataDir, whose Web
// UI decodes payloads through the codec server at codecEndpoint.
func ensureTemporal(ctx context.Context, root, dataDir string, say func(string, ...any), codecEndpoint string) (*temporalServer, error) {
	ns := os.Getenv("TEMPORAL_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	if addr := os.Getenv("TEMPORAL_ADDRESS"); addr != "" {
		return &temporalServer{address: addr, namespace: ns, uiURL: os.Getenv("TEMPORAL_UI_URL"), how: "TEMPORAL_ADDRESS", cli: "temporal"}, nil
	}
	cli, err := buildTemporalCLI(ctx, root, say)
	if err != nil {
		return nil, err
	}
	port := 7233
	if !ports.IsFree(port) || !ports.IsFree(port+1000) {
		if port, err = ports.Free(); err != nil {
			return nil, err
		}
	}
	uiPort := port + 1000
	if !ports.IsFree(uiPort) {
		if uiPort, err = ports.Free(); err != nil {
			return nil, err
		}
	}
	dbFile := filepath.Join(dataDir, "temporal.db")
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1", "--port", fmt.Sprint(port), "--ui-port", fmt.Sprint(uiPort),
		"--db-filename", dbFile,
		"--search-attribute", "OrderId=Keyword",
		"--sqlite-pragma", "journal_mode=WAL", "--sqlite-pragma", "synchronous=NORMAL",
		"--log-level", "warn",
		"--ui-codec-endpoint", codecEndpoint,
	}
	say("starting the Temporal dev server on 127.0.0.1:%d (Web UI on :%d, state in %s)", port, uiPort, dbFile)
	proc, err := startChild(dataDir, "temporal", cli, args, nil)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitTemporal(ctx, addr, ns, 90*time.Second); err != nil {
		proc.Stop(5 * time.Second)
		return nil, fmt.Errorf("temporal dev server: %w (see %s)", err, proc.LogPath())
	}
	return &temporalServer{address: addr, namespace: ns, uiURL: fmt.Sprintf("http://127.0.0.1:%d", uiPort), how: "dev server (bin/temporal)", proc: proc, cli: cli}, nil
}

// buildTemporalCLI builds bin/temporal from the tools module unless it is
// already newer than the module's go.sum. The first build compiles the whole
// Temporal server and takes minutes, so it reports progress.
func buildTemporalCLI(ctx context.Context, root string, say func(string, ...any)) (string, error) {
	bin := filepath.Join(root, "bin", "temporal")
	sum := filepath.Join(root, "tools", "go.sum")
	if bi, err := os.Stat(bin); err == nil {
		if si, err := os.Stat(sum); err == nil && !bi.ModTime().Before(si.ModTime()) {
			return bin, nil
		}
	}
	say("building the Temporal CLI from the tools module (github.com/temporalio/cli); the first build takes several minutes")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/temporalio/cli/cmd/temporal")
	cmd.Dir = filepath.Join(root, "tools")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return "", fmt.Errorf("building the Temporal CLI: %w", err)
			}
			say("built bin/temporal in %s", time.Since(start).Round(time.Second))
			return bin, nil
		case <-tick.C:
			say("  still building the Temporal CLI (%s elapsed)...", time.Since(start).Round(time.Second))
		}
	}
}

// waitTemporal waits until the frontend answers a health check.
func waitTemporal(ctx context.Context, addr, ns string, timeout time.Duration) error {
	if err := ports.WaitTCP(ctx, addr, timeout); err != nil {
		return err
	}
	return ports.Poll(ctx, "Temporal on "+addr, timeout, 300*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, err := client.Dial(client.Options{HostPort: addr, Namespace: ns, Logger: quietLogger{}})
		if err != nil {
			return false, err
		}
		defer c.Close()
		_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err == nil, err
	})
}

// quietLogger drops the SDK's own logs; the demo prints its own progress.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
