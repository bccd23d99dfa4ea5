package failpoints

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	s, err := Parse(" orders.before_commit=crash, relay.after_claim=error,cleanup.mid_batch=sleep:50ms ")
	require.NoError(t, err)
	require.Len(t, s.actions, 3)
	require.Equal(t, 50*time.Millisecond, s.actions[CleanupMidBatch].sleep)

	for _, bad := range []string{"nope=crash", "orders.before_commit", "orders.before_commit=explode", "orders.before_commit=sleep:x", "orders.before_commit=sleep:-1s"} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
	}
	empty, err := Parse("")
	require.NoError(t, err)
	require.NoError(t, empty.Inject(context.Background(), OrdersBeforeCommit))
}

func TestInjectErrorAndSleep(t *testing.T) {
	t.Parallel()
	s, err := Parse("relay.after_claim=error,cleanup.mid_batch=sleep:20ms,relay.after_publish=sleep:1h")
	require.NoError(t, err)
	ctx := context.Background()
	require.ErrorIs(t, s.Inject(ctx, RelayAfterClaim), ErrInjected)
	require.NoError(t, s.Inject(ctx, RelayBeforeMarkCommit), "an unconfigured point does nothing")
	start := time.Now()
	require.NoError(t, s.Inject(ctx, CleanupMidBatch))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, s.Inject(cctx, RelayAfterPublish), context.Canceled, "a sleep ends with its context")
}

// TestInjectCrash re-runs this test binary as a child whose failpoint crashes
// it, and checks the child died of SIGKILL before printing its marker.
func TestInjectCrash(t *testing.T) {
	t.Parallel()
	if os.Getenv("FAILPOINTS_CHILD") == "1" {
		s, err := Parse(os.Getenv(EnvVar))
		if err != nil {
			os.Exit(3)
		}
		_ = s.Inject(context.Background(), OrdersAfterCommit)
		os.Stdout.WriteString("survived\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInjectCrash$")
	cmd.Env = append(os.Environ(), "FAILPOINTS_CHILD=1", EnvVar+"=orders.after_commit=crash")
	out, err := cmd.Output()
	require.Error(t, err)
	require.NotContains(t, string(out), "survived")
	status := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, status.Signaled())
	require.Equal(t, syscall.SIGKILL, status.Signal())
}
