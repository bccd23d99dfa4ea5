package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// temporalServer is the Temporal frontend the demo runs against.
type temporalServer struct {
	address   string
	namespace string
	uiURL     string // empty when unknown (an external cluster)
	how       string
	proc      *devserver.Process
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
	say("starting the Temporal dev server on 127.0.0.1:%d (Web UI on :%d, state in %s)", port, uiPort, dbFile)
	logDir := filepath.Join(dataDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	proc, err := devserver.Launch(ctx, devserver.LaunchOptions{
		Options:         devserver.Options{Port: port, DBFile: dbFile, LogLevel: "warn"},
		CLI:             cli,
		UIPort:          uiPort,
		UICodecEndpoint: codecEndpoint,
		LogFile:         filepath.Join(logDir, "temporal.log"),
		TruncateLog:     true,
		Ready:           90 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal dev server: %w", err)
	}
	return &temporalServer{address: proc.Address(), namespace: ns, uiURL: proc.UIURL(), how: "dev server (bin/temporal)", proc: proc, cli: cli}, nil
}

// buildTemporalCLI builds bin/temporal from the tools module unless it is
// already newer than the module's go.sum.
func buildTemporalCLI(ctx context.Context, root string, say func(string, ...any)) (string, error) {
	return buildTool(ctx, root, "temporal", "github.com/temporalio/cli/cmd/temporal", say)
}

// buildTool builds bin/NAME from the tools module's package pkg unless it
// is already newer than the module's go.sum. A first build compiles a
// whole server and takes minutes, so it reports progress.
func buildTool(ctx context.Context, root, name, pkg string, say func(string, ...any)) (string, error) {
	bin := filepath.Join(root, "bin", name)
	sum := filepath.Join(root, "tools", "go.sum")
	if bi, err := os.Stat(bin); err == nil {
		if si, err := os.Stat(sum); err == nil && !bi.ModTime().Before(si.ModTime()) {
			return bin, nil
		}
	}
	say("building bin/%s from the tools module (%s); the first build takes several minutes", name, pkg)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
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
				return "", fmt.Errorf("building bin/%s: %w", name, err)
			}
			say("built bin/%s in %s", name, time.Since(start).Round(time.Second))
			return bin, nil
		case <-tick.C:
			say("  still building bin/%s (%s elapsed)...", name, time.Since(start).Round(time.Second))
		}
	}
}
