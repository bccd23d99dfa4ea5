// Package natsserver runs a NATS server with JetStream of a test's own
// (the machine's nats-server, or the one NATS_SERVER names), on a free
// loopback port with its store in a directory of the test's: a test may
// stop and restart it, which it must never do to the machine's shared
// server on 127.0.0.1:4222.
package natsserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// Server is a running (or stopped) nats-server.
type Server struct {
	bin, dir string
	port     int
	p        *proc.Process
}

// Binary is the nats-server to run: NATS_SERVER, else nats-server on PATH.
func Binary() (string, error) {
	if b := os.Getenv("NATS_SERVER"); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("nats-server")
	if err != nil {
		return "", errors.New("natsserver: no nats-server on PATH (set NATS_SERVER to one)")
	}
	return b, nil
}

// Start runs a server with JetStream on a free port, its store and log
// under dir, and waits until it accepts connections.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	port, err := ports.Free()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, port: port}
	return s, s.Start(ctx)
}

// URL is the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// Start starts the server again after Stop, on the same port and store:
// the streams survive.
func (s *Server) Start(ctx context.Context) error {
	p, err := proc.Start(proc.Options{
		Name: "nats-server", Bin: s.bin, KillWithParent: true,
		Args:    []string{"-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-js", "-sd", filepath.Join(s.dir, "jetstream")},
		LogPath: filepath.Join(s.dir, "nats-server.log"),
	})
	if err != nil {
		return err
	}
	s.p = p
	if err := p.WaitLog(ctx, "Server is ready"); err != nil {
		p.Kill()
		return fmt.Errorf("natsserver: %w", err)
	}
	return nil
}

// Stop stops the server (SIGTERM, then SIGKILL after 5 s).
func (s *Server) Stop() {
	if s.p != nil {
		s.p.Stop(5 * time.Second)
	}
}

// Restart stops the server and starts it again.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	return s.Start(ctx)
}
