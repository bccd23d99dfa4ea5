package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Build compiles the main package pkg (an import path, or "." for the
// test's own) into t's temporary directory as name and returns the binary's
// path: the process tests of a command run the real binary.
func Build(t testing.TB, name, pkg string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command(goBin, "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Server is a server binary a test runs under [Start], serving at Addr.
type Server struct {
	*Process
	// Addr is the address the server logged it listens on.
	Addr string
}

// listening is the line outflow's binaries log once they serve
// (internal/service, in the logfmt of a text logger).
var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

// StartServer starts bin for t with env added to this process's
// environment (a later entry of a key wins), its output in a log file in t's
// temporary directory, and waits up to timeout for its line "msg=listening
// addr=ADDR" (a text logger's). The server is killed when t ends, and its
// log printed when t failed.
func StartServer(t testing.TB, name, bin string, timeout time.Duration, env ...string) *Server {
	t.Helper()
	p, err := Start(Options{Name: name, Bin: bin, Env: append(os.Environ(), env...),
		LogPath: filepath.Join(t.TempDir(), name+".log"), Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Log())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m, err := p.WaitLogMatch(ctx, listening)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{Process: p, Addr: m[1]}
}

// RequireKilled waits up to 30 s for the server to die by SIGKILL of its
// own crash failpoint fp, having logged failpoints' "failpoint FP: crashing
// (SIGKILL)" (fp "": any failpoint's).
func (s *Server) RequireKilled(t testing.TB, fp string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitKilled(ctx); err != nil {
		t.Fatal(err)
	}
	want := "crashing (SIGKILL)"
	if fp != "" {
		want = "failpoint " + fp + ": " + want
	}
	if !strings.Contains(s.Log(), want) {
		t.Fatalf("%s died by SIGKILL without logging %q:\n%s", s.Name(), want, s.Log())
	}
}

// RequireStopped sends the server SIGTERM and requires a clean exit (status
// 0) within 30 s.
func (s *Server) RequireStopped(t testing.TB) {
	t.Helper()
	s.Stop(30 * time.Second)
	if status, _ := s.Status(); status.Signaled() || status.ExitStatus() != 0 {
		t.Fatalf("%s did not stop cleanly on SIGTERM (%v):\n%s", s.Name(), status, s.Log())
	}
}
