package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The crash round's kill runs a contender's consumer in a child process:
// this binary (or test binary) again, with these variables set.
const (
	// consumerEnv names the contender whose consumer the child runs.
	consumerEnv = "OUTFLOW_PEERS_CONSUMER"
	// consumerURLEnv is the contender's scratch database.
	consumerURLEnv = "OUTFLOW_PEERS_CONSUMER_URL"
)

// errConsumerUsage is a consumer child started without its database.
var errConsumerUsage = errors.New("the crash round's consumer needs " + consumerEnv + " and " + consumerURLEnv)

// consumerChild runs this process as the crash round's consumer, and
// exits, when its parent started it as one (consumerEnv set); it returns
// otherwise. main and TestMain call it first.
func consumerChild() {
	name := os.Getenv(consumerEnv)
	if name == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := runConsumer(ctx, name, os.Getenv(consumerURLEnv), os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "consumer %s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runConsumer runs contender name's consumer with the tuned settings on
// the database at dbURL until ctx ends, then stops it gracefully. Its sink
// writes a line per delivery to out (see lineSink).
func runConsumer(ctx context.Context, name, dbURL string, out io.Writer) error {
	if dbURL == "" {
		return errConsumerUsage
	}
	var c Contender
	for _, x := range contenders() {
		if x.Name() == name {
			c = x
		}
	}
	if c == nil {
		return fmt.Errorf("%s=%q: no such contender", consumerEnv, name)
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	stop, err := c.Start(ctx, pool, &lineSink{w: out}, Tuned)
	if err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), crashStop)
	defer cancel()
	return stop(sctx)
}

// lineSink is the child's sink: each delivery is one line, "delivered ID
// ORDER SEQ UNIXNANO", written with one write(2) before Deliver returns, so
// a delivery the contender saw succeed is in the log even if the process
// is killed the next instant.
type lineSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *lineSink) Deliver(_ context.Context, e Event) error {
	line := fmt.Sprintf("delivered %s %s %d %d\n", e.ID, e.OrderID, e.Seq, time.Now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := io.WriteString(s.w, line)
	return err
}

// parseDelivery reads a lineSink line; ok is false for any other line (the
// contender's own logs share the file).
func parseDelivery(line string) (e Event, at time.Time, ok bool) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "delivered" {
		return Event{}, time.Time{}, false
	}
	id, err := uuid.Parse(f[1])
	if err != nil {
		return Event{}, time.Time{}, false
	}
	seq, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return Event{}, time.Time{}, false
	}
	nanos, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return Event{}, time.Time{}, false
	}
	return Event{ID: id, OrderID: f[2], Seq: seq}, time.Unix(0, nanos), true
}

// consumerLog follows the children's log, feeding rec each delivery at the
// time the child's sink took it.
type consumerLog struct {
	path string
	rec  *recorder

	mu      sync.Mutex
	offset  int64
	partial []byte
}

// read feeds rec the deliveries written since the last read (whole lines
// only).
func (l *consumerLog) read() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	l.offset += int64(len(data))
	buf := append(l.partial, data...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		if e, at, ok := parseDelivery(string(buf[:i])); ok {
			l.rec.deliverAt(e, at)
		}
		buf = buf[i+1:]
	}
	l.partial = bytes.Clone(buf)
	return nil
}

// follow reads the log every few milliseconds until the returned stop,
// which reads it a last time; stop may be called more than once.
func (l *consumerLog) follow() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			_ = l.read() // a failed read is tried again
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
			_ = l.read()
		})
	}
}

// poolURL is a URL of cfg's database, for a child process.
func poolURL(cfg *pgxpool.Config) string {
	cc := cfg.ConnConfig
	u := url.URL{Scheme: "postgres", Path: "/" + cc.Database}
	q := url.Values{}
	if strings.HasPrefix(cc.Host, "/") {
		q.Set("host", cc.Host)
		q.Set("port", strconv.Itoa(int(cc.Port)))
	} else {
		u.Host = net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	}
	u.User = url.User(cc.User)
	if cc.Password != "" {
		u.User = url.UserPassword(cc.User, cc.Password)
	}
	if cc.TLSConfig == nil {
		q.Set("sslmode", "disable")
	} else {
		q.Set("sslmode", "require")
	}
	q.Set("pool_max_conns", strconv.Itoa(int(cfg.MaxConns)))
	u.RawQuery = q.Encode()
	return u.String()
}
