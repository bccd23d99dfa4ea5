// Package proc supervises the child processes of tests and dev tools: it
// starts a binary in a process group of its own with its output in a log
// file, waits for a line in that log, stops it (SIGTERM, then SIGKILL after
// a grace period), kills it, and reports how it ended. The crash tests of
// testsuite, the demo (cmd/demo) and the Temporal cluster
// (internal/dev/cluster) run their children through it. A command's
// process test builds it with [Build] and runs it with [StartServer], which
// waits for its listen address and kills it when the test ends. A test that
// plays the crashing part itself re-runs in a child with [RerunKilled].
//
//	p, err := proc.Start(proc.Options{Name: "starter", Bin: bin, LogPath: log, Env: env})
//	if err != nil { ... }
//	defer p.Stop(10 * time.Second)
//	if err := p.WaitLog(ctx, "started"); err != nil { ... }
package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options says what to run and where its output goes.
type Options struct {
	// Name names the process in its log's start banner and in errors.
	Name string
	// Bin is the program; Args its arguments.
	Bin  string
	Args []string
	// Env is the child's whole environment. Optional: defaulted to this
	// process's (see [Environ] to drop variables from it).
	Env []string
	// LogPath receives the child's stdout and stderr. By default the file
	// is appended to, after a banner line "===== Name start TIME =====", so
	// that one log can hold a process's restarts and [Process.WaitLog] and
	// [Process.LogTail] read only the current run; with Truncate it is
	// created afresh, without a banner.
	LogPath  string
	Truncate bool
	// KillWithParent asks the kernel to SIGKILL the child when the thread
	// that started it dies (Linux's Pdeathsig), so a killed parent leaves
	// no server holding ports and connections.
	KillWithParent bool
}

// Process is a running (or ended) child, alone in its process group: a
// terminal's Ctrl-C reaches only the parent, which stops its children in
// order, and a stop or kill reaches the child's own children too.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	banner  string // "" when the log was truncated
	done    chan struct{}

	mu     sync.Mutex
	status syscall.WaitStatus
}

// Start starts the process. Its output goes to o.LogPath until it ends.
func Start(o Options) (*Process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if o.Truncate {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	f, err := os.OpenFile(o.LogPath, flags, 0o644)
	if err != nil {
		return nil, err
	}
	p := &Process{name: o.Name, logPath: o.LogPath, done: make(chan struct{})}
	if !o.Truncate {
		p.banner = "===== " + o.Name + " start"
		fmt.Fprintf(f, "\n%s %s =====\n", p.banner, time.Now().Format(time.RFC3339Nano))
	}
	cmd := exec.Command(o.Bin, o.Args...)
	cmd.Env = o.Env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.KillWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", o.Name, err)
	}
	p.cmd = cmd
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

// Environ is this process's environment without the variables whose key
// drop reports true.
func Environ(drop func(key string) bool) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop(k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// LogPath is the file that receives the process's output.
func (p *Process) LogPath() string { return p.logPath }

// Pid returns the process id (also its process group's).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Status is how the process ended; ok is false while it runs.
func (p *Process) Status() (status syscall.WaitStatus, ok bool) {
	if !p.Exited() {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, true
}

// Kill sends SIGKILL to the process group and waits for the process to be
// gone.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM to the process group, waits up to grace, then kills.
// It does nothing when the process has ended.
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

// WaitKilled waits until the process dies of SIGKILL (a crash failpoint) and
// fails if it ends otherwise or ctx ends first.
func (p *Process) WaitKilled(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("%s did not crash: %w\n%s", p.name, ctx.Err(), p.LogTail(20))
	}
	status, _ := p.Status()
	if !status.Signaled() || status.Signal() != syscall.SIGKILL {
		return fmt.Errorf("%s exited with %v, want death by SIGKILL\n%s", p.name, status, p.LogTail(20))
	}
	return nil
}

// WaitLog waits until the process's output (of this run) contains marker;
// it fails early when the process ends first.
func (p *Process) WaitLog(ctx context.Context, marker string) error {
	_, err := p.waitLog(ctx, fmt.Sprintf("%q", marker), func(out string) []string {
		if strings.Contains(out, marker) {
			return []string{marker}
		}
		return nil
	})
	return err
}

// WaitLogMatch is [Process.WaitLog] for the first text of this run's output
// that re matches; it returns the match and its groups.
func (p *Process) WaitLogMatch(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	return p.waitLog(ctx, fmt.Sprintf("a line like %q", re), re.FindStringSubmatch)
}

// waitLog polls this run's output until find finds what (as errors name it)
// in it, the process ends without it, or ctx ends.
func (p *Process) waitLog(ctx context.Context, what string, find func(out string) []string) ([]string, error) {
	for {
		if m := find(p.Log()); m != nil {
			return m, nil
		}
		if p.Exited() {
			// The last lines may have been written just before the end.
			if m := find(p.Log()); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("%s exited before logging %s (see %s)\n%s", p.name, what, p.logPath, p.LogTail(30))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s did not log %s: %w (see %s)\n%s", p.name, what, ctx.Err(), p.logPath, p.LogTail(30))
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Log returns what the process logged in this run.
func (p *Process) Log() string { return string(p.output()) }

// LogTail returns the last n lines the process logged in this run.
func (p *Process) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(string(p.output()), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// output is the log from this run's banner on.
func (p *Process) output() []byte {
	b, _ := os.ReadFile(p.logPath)
	if p.banner != "" {
		if i := bytes.LastIndex(b, []byte(p.banner)); i >= 0 {
			b = b[i:]
		}
	}
	return b
}
