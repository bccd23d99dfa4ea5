package ports

import (
	"context"
	"errors"
	"net"
	"strconv"
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
