package testsuite

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
)

// TemporalServer is a dev server the harness can stop and start again on the
// same port and database file, so workflow state survives a restart.
type TemporalServer struct {
	cli, dir string
	Port     int
	proc     *Process
}

// StartTemporal starts a dev server persisting to dir/temporal.db.
func StartTemporal(ctx context.Context, cli, dir string) (*TemporalServer, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s := &TemporalServer{cli: cli, dir: dir, Port: port}
	return s, s.Start(ctx)
}

// Address is the frontend's host:port.
func (s *TemporalServer) Address() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// Start (re)starts the server and waits until it is healthy.
func (s *TemporalServer) Start(ctx context.Context) error {
	args := []string{"server", "start-dev", "--headless",
		"--ip", "127.0.0.1", "--port", fmt.Sprint(s.Port),
		"--db-filename", filepath.Join(s.dir, "temporal.db"),
		"--search-attribute", "OrderId=Keyword",
		"--sqlite-pragma", "journal_mode=WAL", "--sqlite-pragma", "synchronous=NORMAL",
		"--log-level", "error",
	}
	p, err := StartProcess("temporal", s.cli, filepath.Join(s.dir, "temporal.log"), nil, args...)
	if err != nil {
		return err
	}
	s.proc = p
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := client.Dial(client.Options{HostPort: s.Address(), Logger: nopLogger{}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return nil
			}
		}
		if p.Exited() || time.Now().After(deadline) {
			return fmt.Errorf("temporal dev server not healthy: %v\n%s", err, p.LogTail(30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops the server gracefully (its state stays in the database file).
func (s *TemporalServer) Stop() {
	if s.proc != nil {
		s.proc.Stop(20 * time.Second)
	}
}

// Client dials the server.
func (s *TemporalServer) Client() (client.Client, error) {
	return client.Dial(client.Options{HostPort: s.Address(), Logger: nopLogger{}})
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// nopLogger silences the SDK client inside tests.
type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}
