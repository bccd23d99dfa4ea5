package testsuite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one running instance of a binary, with its output captured to
// a log file the test prints when it fails.
type Process struct {
	Name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	mu      sync.Mutex
	status  syscall.WaitStatus
}

// StartProcess runs bin with env (on top of a minimal inherited environment).
func StartProcess(name, bin, logPath string, env []string, args ...string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "\n===== %s start %s =====\n", name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			p.status = ws
		}
		p.mu.Unlock()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// baseEnv keeps PATH and HOME-like variables and drops anything that could
// point a child at the wrong database or server.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "DATABASE_URL", strings.HasPrefix(k, "TEMPORAL_"), strings.HasPrefix(k, "OUTFLOW_"),
			strings.HasPrefix(k, "STRIPE_"), strings.HasPrefix(k, "EMAIL_"), k == "METRICS_ADDR",
			k == "ORDERAPI_ADDR", k == "ORDERAPI_TOKEN", k == "PROVIDERSIM_ADDR":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM, waits up to grace, then kills.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// WaitKilled waits until the process dies of SIGKILL (a crash failpoint).
func (p *Process) WaitKilled(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("%s did not crash: %w\n%s", p.Name, ctx.Err(), p.LogTail(20))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.status.Signaled() || p.status.Signal() != syscall.SIGKILL {
		return fmt.Errorf("%s exited with %v, want death by SIGKILL\n%s", p.Name, p.status, p.LogTail(20))
	}
	return nil
}

// WaitLog waits until the process's log contains marker.
func (p *Process) WaitLog(ctx context.Context, marker string) error {
	for {
		b, _ := os.ReadFile(p.logPath)
		if i := bytes.LastIndex(b, []byte("===== "+p.Name+" start")); i >= 0 {
			b = b[i:]
		}
		if bytes.Contains(b, []byte(marker)) {
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("%s exited before logging %q\n%s", p.Name, marker, p.LogTail(30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not log %q: %w\n%s", p.Name, marker, ctx.Err(), p.LogTail(30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// LogTail returns the last n lines the process logged.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
