// Package ports finds loopback TCP ports for the processes tests and dev
// tools start (dev servers, throwaway PostgreSQL, the demo's services), and
// polls until what they started is ready: the one copy of each the dev
// tools, the test suites and the benchmarks share.
package ports

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// Free asks the kernel for a TCP port on 127.0.0.1 that was free a moment
// ago (another process may take it before the caller binds it).
// Ports are chosen from [lowPortMin, lowPortMax): below Linux's ephemeral
// range (32768 and up), which the kernel hands to outgoing connections, so
// that no client connection opened between choosing a port and the child's
// bind can take it; and below 32767 with room for a +1000 neighbour (the
// Temporal dev server's UI), since the Temporal server stores membership
// ports in a SMALLINT.
const lowPortMin, lowPortMax = 20000, 31000

var cursor atomic.Int64

// FreeN returns n distinct loopback TCP ports that were free a moment ago
// (held open together while choosing, so that they differ). The search
// starts at a random offset so that concurrent test processes rarely try
// the same ports; another process may still take one before the caller
// binds it.
func FreeN(n int) ([]int, error) {
	cursor.CompareAndSwap(0, lowPortMin+rand.Int64N(lowPortMax-lowPortMin))
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n && tries < lowPortMax-lowPortMin; tries++ {
		p := int(lowPortMin + (cursor.Add(1)-lowPortMin)%(lowPortMax-lowPortMin))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("find %d free ports in [%d, %d): only %d free", n, lowPortMin, lowPortMax, len(ports))
	}
	return ports, nil
}

// Free is [FreeN] for one port.
func Free() (int, error) {
	ps, err := FreeN(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// IsFree reports whether nothing listens on 127.0.0.1:port.
func IsFree(port int) bool { return AddrFree(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) }

// AddrFree reports whether addr (host:port) can be listened on.
func AddrFree(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Poll calls ready every interval until it is done, or timeout passes (ctx's
// end too). ready reports (true, nil) when what it waits for is ready,
// (true, err) to give up at once with err (the child it waits for exited),
// and (false, err) to try again, err being why it is not ready yet. On a
// timeout the error names what and wraps ready's last error (or
// context.DeadlineExceeded); when ctx ends first, ctx's error.
func Poll(ctx context.Context, what string, timeout, interval time.Duration, ready func(context.Context) (bool, error)) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done, err := ready(pctx)
		if done {
			return err
		}
		select {
		case <-pctx.Done():
			if ctx.Err() != nil {
				return errors.Join(ctx.Err(), err)
			}
			if err == nil {
				err = context.DeadlineExceeded
			}
			return fmt.Errorf("%s: not ready within %s: %w", what, timeout, err)
		case <-t.C:
		}
	}
}

// WaitTCP waits until something accepts connections on addr.
func WaitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	return Poll(ctx, "nothing answered on "+addr, timeout, 200*time.Millisecond, func(context.Context) (bool, error) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
}
