package proc

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/outflow/outflow/outbox/failpoints"
)

// childEnv names, in a child [RerunKilled] started, the test it runs.
const childEnv = "OUTFLOW_PROC_CRASH_CHILD"

// IsChild reports whether this test binary is the child [RerunKilled]
// started for t's test: the test then plays the part that crashes, before
// it calls t.Parallel.
func IsChild(t testing.TB) bool { return os.Getenv(childEnv) == t.Name() }

// InChild reports whether this test binary is a child [RerunKilled]
// started, for a TestMain (which then skips its leak check: the child dies
// mid-test).
func InChild() bool { return os.Getenv(childEnv) != "" }

// RerunKilled runs t's test (a top-level one) again in a child of this test
// binary, with env added and OUTFLOW_FAILPOINTS set to crash at fp, and
// requires the child to die by SIGKILL having logged the failpoint's name.
func RerunKilled(t testing.TB, fp string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = slices.Concat(os.Environ(), env, []string{childEnv + "=" + t.Name(), failpoints.EnvVar + "=" + fp + "=crash"})
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err == nil {
		t.Fatalf("the child survived failpoint %s:\n%s", fp, out)
	}
	if status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		t.Fatalf("the child did not die by SIGKILL at failpoint %s (%v):\n%s", fp, err, out)
	}
	if !strings.Contains(out, fp) {
		t.Fatalf("the child died by SIGKILL without naming failpoint %s:\n%s", fp, out)
	}
}
