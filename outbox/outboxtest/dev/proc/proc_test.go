package proc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/failpoints"
)

func sh(t *testing.T, logPath, script string) *Process {
	t.Helper()
	p, err := Start(Options{Name: "sh", Bin: "/bin/sh", Args: []string{"-c", script}, LogPath: logPath})
	require.NoError(t, err)
	t.Cleanup(func() { p.Kill() })
	return p
}

func TestWaitLogStopAndStatus(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "sh.log")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	p := sh(t, logPath, "echo ready; exec sleep 60")
	require.NoError(t, p.WaitLog(ctx, "ready"))
	_, ended := p.Status()
	require.False(t, ended)
	p.Stop(5 * time.Second)
	status, ended := p.Status()
	require.True(t, ended)
	require.True(t, status.Signaled())
	require.Equal(t, syscall.SIGTERM, status.Signal())
	require.Error(t, p.WaitKilled(ctx), "a SIGTERM is not a crash")

	// A restart appends to the same log; WaitLog and LogTail read only the
	// current run.
	p2 := sh(t, logPath, "echo second; exec sleep 60")
	require.NoError(t, p2.WaitLog(ctx, "second"))
	tail := p2.LogTail(10)
	require.NotContains(t, tail, "ready")
	require.Contains(t, tail, "second")
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(b), "===== sh start"))
	p2.Kill()
	require.NoError(t, p2.WaitKilled(ctx))
}

func TestWaitLogFailsWhenTheProcessExits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := sh(t, filepath.Join(t.TempDir(), "sh.log"), "echo refusing; exit 3")
	err := p.WaitLog(ctx, "ready")
	require.ErrorContains(t, err, "exited before logging")
	require.ErrorContains(t, err, "refusing")
	status, ended := p.Status()
	require.True(t, ended)
	require.Equal(t, 3, status.ExitStatus())
}

func TestStopKillsTheGroupAfterGrace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The shell ignores SIGTERM, so only the SIGKILL after the grace ends it.
	p := sh(t, filepath.Join(t.TempDir(), "sh.log"), "trap '' TERM; echo up; while :; do sleep 0.1; done")
	require.NoError(t, p.WaitLog(ctx, "up"))
	start := time.Now()
	p.Stop(300 * time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.NoError(t, p.WaitKilled(ctx))
}

func TestTruncateAndEnviron(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logPath := filepath.Join(t.TempDir(), "env.log")
	require.NoError(t, os.WriteFile(logPath, []byte("old run\n"), 0o644))
	t.Setenv("PROC_TEST_DROP", "x")
	t.Setenv("PROC_TEST_KEEP", "y")
	env := Environ(func(k string) bool { return strings.HasPrefix(k, "PROC_TEST_DROP") })
	p, err := Start(Options{Name: "env", Bin: "/bin/sh", Args: []string{"-c", "env; echo done"}, LogPath: logPath, Truncate: true, Env: env})
	require.NoError(t, err)
	require.NoError(t, p.WaitLog(ctx, "done"))
	<-p.Done()
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.NotContains(t, string(b), "old run")
	require.NotContains(t, string(b), "=====")
	require.Contains(t, string(b), "PROC_TEST_KEEP=y")
	require.NotContains(t, string(b), "PROC_TEST_DROP")
}

// script writes body as an executable shell script, a stand-in for a
// server binary.
func script(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "server.sh")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return bin
}

func TestStartServerStopAndKilled(t *testing.T) {
	t.Parallel()
	// A server that logs its address from its environment and exits 0 on
	// SIGTERM.
	bin := script(t, `trap 'echo msg=stopped; exit 0' TERM
echo "level=INFO msg=listening addr=$SERVER_ADDR"
while :; do sleep 0.1; done`)
	s := StartServer(t, "server", bin, 10*time.Second, "SERVER_ADDR=127.0.0.1:1", "SERVER_ADDR=127.0.0.1:7")
	require.Equal(t, "127.0.0.1:7", s.Addr, "the later value of a key wins")
	s.RequireStopped(t)
	require.Contains(t, s.Log(), "msg=stopped")

	// One that crashes at a failpoint, as failpoints does.
	bin = script(t, `echo "msg=listening addr=127.0.0.1:8"
sleep 0.2
echo "failpoint test.crash: crashing (SIGKILL)" >&2
kill -KILL $$`)
	s = StartServer(t, "crasher", bin, 10*time.Second)
	require.Equal(t, "127.0.0.1:8", s.Addr)
	s.RequireKilled(t, "test.crash")
}

func TestStartServerFailsWhenItExitsFirst(t *testing.T) {
	t.Parallel()
	bin := script(t, "echo refusing; exit 2")
	p, err := Start(Options{Name: "server", Bin: bin, LogPath: filepath.Join(t.TempDir(), "server.log")})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.WaitLogMatch(ctx, listening)
	require.ErrorContains(t, err, "exited before logging a line like")
	require.ErrorContains(t, err, "refusing")
}

// TestRerunKilled: the child is this test, dying at the failpoint the
// parent set.
func TestRerunKilled(t *testing.T) {
	if IsChild(t) {
		fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
		require.NoError(t, err)
		require.Equal(t, "x", os.Getenv("PROC_TEST_CHILD_VALUE"))
		_ = fps.Inject(context.Background(), failpoints.RelayAfterPublish)
		t.Fatal("survived the failpoint")
	}
	t.Parallel()
	RerunKilled(t, failpoints.RelayAfterPublish, "PROC_TEST_CHILD_VALUE=x")
}
