package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// child is a process the demo started and must stop.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// startChild runs bin with env added to the demo's own environment, its
// output going to .data/logs/<name>.log.
func startChild(dataDir, name, bin string, args []string, env []string) (*child, error) {
	logDir := filepath.Join(dataDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group: Ctrl-C in the terminal reaches the demo, which then
	// stops its children in order instead of all dying at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(c.done) }()
	return c, nil
}

// stop asks the child to shut down gracefully, then kills it.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// waitLog waits until the child's log contains marker, failing early if the
// child exits.
func (c *child) waitLog(ctx context.Context, marker string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(c.logPath)
		if strings.Contains(string(b), marker) {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited during start-up; last lines of %s:\n%s", c.name, c.logPath, tail(string(b), 15))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not report %q within %s; see %s:\n%s", c.name, marker, timeout, c.logPath, tail(string(b), 15))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
