package ports

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFreeAndIsFree(t *testing.T) {
	t.Parallel()
	p, err := Free()
	require.NoError(t, err)
	require.True(t, IsFree(p))
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	require.NoError(t, err)
	defer l.Close()
	require.False(t, IsFree(p), "a port someone listens on is not free")
}

// TestFreeIsOutsideTheEphemeralRange: a port the kernel may hand to any
// outgoing connection between Free and the child's bind is a port the child
// can fail to listen on ("address already in use", as a soak's order API
// once did while the Temporal cluster opened connections).
func TestFreeIsOutsideTheEphemeralRange(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to compare with: %v", err)
	}
	f := strings.Fields(string(raw))
	require.Len(t, f, 2)
	lo, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	hi, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	seen := map[int]bool{}
	for range 50 {
		p, err := Free()
		require.NoError(t, err)
		require.False(t, p >= lo && p <= hi, "port %d is in the kernel's ephemeral range [%d, %d]", p, lo, hi)
		seen[p] = true
	}
	require.Greater(t, len(seen), 1, "Free must not hand out one port again and again")
	ps, err := FreeN(8)
	require.NoError(t, err)
	distinct := map[int]bool{}
	for _, p := range ps {
		distinct[p] = true
	}
	require.Len(t, distinct, 8, "FreeN's ports differ")
}

func TestPoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := 0
	require.NoError(t, Poll(ctx, "thing", time.Second, time.Millisecond, func(context.Context) (bool, error) {
		n++
		return n == 3, nil
	}))
	require.Equal(t, 3, n)

	boom := errors.New("connection refused")
	err := Poll(ctx, "thing", 20*time.Millisecond, time.Millisecond, func(context.Context) (bool, error) { return false, boom })
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "thing: not ready within 20ms")

	err = Poll(ctx, "thing", 20*time.Millisecond, time.Millisecond, func(context.Context) (bool, error) { return false, nil })
	require.ErrorIs(t, err, context.DeadlineExceeded)

	gone := errors.New("child exited")
	n = 0
	err = Poll(ctx, "thing", time.Second, time.Millisecond, func(context.Context) (bool, error) { n++; return true, gone })
	require.Equal(t, gone, err, "a done with an error gives up at once")
	require.Equal(t, 1, n)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = Poll(cctx, "thing", time.Second, time.Millisecond, func(context.Context) (bool, error) { return false, boom })
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, boom)
}

func TestWaitTCP(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, WaitTCP(context.Background(), l.Addr().String(), time.Second))
	p, err := Free()
	require.NoError(t, err)
	require.ErrorContains(t, WaitTCP(context.Background(), net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), 300*time.Millisecond),
		"nothing answered on 127.0.0.1:"+strconv.Itoa(p)+": not ready within 300ms")
}
