package ctl

import (
	"context"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
)

// DialPatience is how long a command that must hear Temporal's answer
// (forget-customer) keeps dialling while the frontend refuses connections:
// a node of a cluster that dies or restarts behind a load balancer drops a
// few connections before the balancer or the client moves on, and an
// operator's command should not fail for that.
const DialPatience = 15 * time.Second

// DialTemporal dials Temporal, again with backoff (100 ms doubling to 2 s)
// while the dial fails as unreachable (gRPC Unavailable: refused, reset,
// "error reading server preface") and ctx lasts. Any other error, and the
// last one when ctx ends, is returned as the SDK reported it.
func DialTemporal(ctx context.Context, o client.Options) (client.Client, error) {
	delay := 100 * time.Millisecond
	for {
		c, err := client.DialContext(ctx, o)
		if err == nil || serviceerror.ToStatus(err).Code() != codes.Unavailable {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}
