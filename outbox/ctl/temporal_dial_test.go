package ctl

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// droppingListener closes the first drop connections it accepts at once,
// as a frontend that dies or is not ready yet does behind a load balancer
// (the client reads EOF where the server's preface should be).
type droppingListener struct {
	net.Listener
	drop     int64
	accepted atomic.Int64
}

func (l *droppingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.accepted.Add(1) <= l.drop {
			c.Close()
			continue
		}
		return c, nil
	}
}

// systemInfo is a frontend that answers the dial's one call.
type systemInfo struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (systemInfo) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{Capabilities: &workflowservice.GetSystemInfoResponse_Capabilities{}}, nil
}

func serveFrontend(t *testing.T, drop int64) *droppingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dl := &droppingListener{Listener: ln, drop: drop}
	srv := grpc.NewServer()
	workflowservice.RegisterWorkflowServiceServer(srv, systemInfo{})
	go func() { _ = srv.Serve(dl) }()
	t.Cleanup(srv.Stop)
	return dl
}

// TestDialTemporalWaitsOutDroppedConnections: forget-customer's dial goes on
// through connections a frontend drops (a cluster node killed or starting
// behind its load balancer, seen in the chaos soak on the cluster), and
// still gives up, with the SDK's own error, when they never stop.
func TestDialTemporalWaitsOutDroppedConnections(t *testing.T) {
	t.Parallel()
	quiet := tlog.NewStructuredLogger(testlog.Logger())
	ln := serveFrontend(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialTemporal(ctx, client.Options{HostPort: ln.Addr().String(), Logger: quiet})
	require.NoError(t, err, "three dropped connections are waited out")
	c.Close()
	require.GreaterOrEqual(t, ln.accepted.Load(), int64(4))

	never := serveFrontend(t, 1<<40)
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err = DialTemporal(ctx, client.Options{HostPort: never.Addr().String(), Logger: quiet})
	require.Error(t, err)
	require.Equal(t, codes.Unavailable, serviceerror.ToStatus(err).Code(), "%v", err)
	require.Contains(t, err.Error(), "failed reaching server")
	require.Less(t, time.Since(start), 5*time.Second, "it stops when its context ends")
	require.GreaterOrEqual(t, never.accepted.Load(), int64(2), "it dialled again before giving up")
}
