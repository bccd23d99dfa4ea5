package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// balancer is a TCP load balancer in front of the nodes' frontends, the
// role of a cloud load balancer or a Kubernetes Service in production: each
// accepted connection goes to the next frontend in turn that accepts a TCP
// connection within a second. It does not look into gRPC: a client's
// connection stays on one frontend until that frontend closes it (it dies,
// or frontend.keepAliveMaxConnectionAge rotates connections every 5 minutes)
// and the SDK reconnects, through the balancer, to a live one.
type balancer struct {
	ln       net.Listener
	mu       sync.Mutex
	backends []string
	next     atomic.Uint64
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
	// Dials counts connections handed to each backend.
	dials map[string]int64
}

func newBalancer(addr string) (*balancer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: frontend address %s: %w", addr, err)
	}
	return &balancer{ln: ln, conns: map[net.Conn]struct{}{}, dials: map[string]int64{}}, nil
}

func (b *balancer) addr() string { return b.ln.Addr().String() }

func (b *balancer) setBackends(addrs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = append([]string(nil), addrs...)
}

func (b *balancer) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !b.track(c) {
			c.Close()
			return
		}
		b.wg.Go(func() { b.handle(c) })
	}
}

func (b *balancer) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *balancer) untrack(c net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns, c)
}

// handle pipes one client connection to a live frontend.
func (b *balancer) handle(client net.Conn) {
	defer b.untrack(client)
	defer client.Close()
	b.mu.Lock()
	backends := append([]string(nil), b.backends...)
	b.mu.Unlock()
	if len(backends) == 0 {
		return
	}
	start := b.next.Add(1)
	var server net.Conn
	for i := range backends {
		addr := backends[(int(start)+i)%len(backends)]
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			server = c
			b.mu.Lock()
			b.dials[addr]++
			b.mu.Unlock()
			break
		}
	}
	if server == nil {
		return
	}
	if !b.track(server) {
		server.Close()
		return
	}
	defer b.untrack(server)
	defer server.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	// One side ended: a dead frontend or a closed client. Close both so
	// the client notices at once and reconnects.
	client.Close()
	server.Close()
	<-done
}

// dialCounts returns how many connections each frontend got.
func (b *balancer) dialCounts() map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int64, len(b.dials))
	for k, v := range b.dials {
		out[k] = v
	}
	return out
}

func (b *balancer) close() {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.ln.Close()
	b.wg.Wait()
}
