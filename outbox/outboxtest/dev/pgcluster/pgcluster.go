// Package pgcluster starts a throwaway PostgreSQL server from the machine's
// own initdb and pg_ctl: the server `make demo` and `make cluster` fall back
// to when none answers, and the private server of tests and benchmarks that
// need settings the shared one must not change (wal_level=logical for the
// CDC relay source).
//
// When the process runs as root the cluster is owned and run by the postgres
// user, because initdb and postgres refuse to run as root.
package pgcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// Options configure a cluster. The zero value starts a server on a free
// port with wal_level=logical, so one cluster serves both relay sources.
type Options struct {
	// Dir holds the data directory, the socket and the server log; an
	// existing data directory is reused. Mandatory.
	Dir string
	// Port to listen on, on 127.0.0.1. Optional: defaulted to PreferredPort
	// when that is free, else any free port.
	Port int
	// PreferredPort is tried when Port is zero. Optional.
	PreferredPort int
	// WALLevel is the server's wal_level. Optional: defaulted to "logical".
	WALLevel string
	// MaxReplicationSlots and MaxWALSenders. Optional: defaulted to 10 each.
	MaxReplicationSlots int
	MaxWALSenders       int
	// Settings are further "name=value" server settings (-c).
	Settings []string
}

// Cluster is a running throwaway server.
type Cluster struct {
	// URL reaches the postgres database as the postgres user (trust auth).
	URL  string
	Dir  string
	Port int
	bin  string
	opts string
}

// Start initialises the cluster in o.Dir when needed and starts it; it
// returns once the server answers.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("pgcluster: Options.Dir is mandatory")
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	if blocked := blockedFromPostgres(o.Dir); blocked != "" {
		return nil, fmt.Errorf("pgcluster: running as root, the cluster in %s belongs to the postgres user, who cannot enter %s (mode %s, e.g. root's home); "+
			"put the cluster (or the checkout) where postgres can reach it, or run as another user", o.Dir, blocked, modeOf(blocked))
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	pgdata := filepath.Join(o.Dir, "data")
	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); err != nil {
		if err := os.MkdirAll(pgdata, 0o700); err != nil {
			return nil, err
		}
		cmd, err := asPostgresUser(o.Dir, filepath.Join(bin, "initdb"), "-D", pgdata, "-U", "postgres", "--auth=trust", "--no-sync")
		if err != nil {
			return nil, err
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %v\n%s", err, out)
		}
	}
	port := o.Port
	if port == 0 {
		if o.PreferredPort != 0 && ports.IsFree(o.PreferredPort) {
			port = o.PreferredPort
		} else if port, err = ports.Free(); err != nil {
			return nil, err
		}
	}
	walLevel := o.WALLevel
	if walLevel == "" {
		walLevel = "logical"
	}
	slots, senders := o.MaxReplicationSlots, o.MaxWALSenders
	if slots == 0 {
		slots = 10
	}
	if senders == 0 {
		senders = 10
	}
	settings := append([]string{
		"listen_addresses=127.0.0.1", "fsync=off",
		"wal_level=" + walLevel,
		"max_replication_slots=" + strconv.Itoa(slots),
		"max_wal_senders=" + strconv.Itoa(senders),
	}, o.Settings...)
	opts := fmt.Sprintf("-p %d -k %s -c %s", port, o.Dir, strings.Join(settings, " -c "))
	c := &Cluster{
		URL:  fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Dir:  o.Dir,
		Port: port,
		bin:  bin,
		opts: opts,
	}
	if err := c.pgCtl("-o", opts, "-l", filepath.Join(o.Dir, "server.log"), "-w", "start"); err != nil {
		return nil, err
	}
	if err := Ping(ctx, c.URL); err != nil {
		c.Stop()
		return nil, fmt.Errorf("the throwaway cluster started but does not answer: %w", err)
	}
	return c, nil
}

// Stop shuts the server down (fast mode) and waits.
func (c *Cluster) Stop() {
	_ = c.pgCtl("-m", "fast", "-w", "stop")
}

// StartTemp starts a throwaway server as [Start] does, in a new temporary
// directory (o.Dir is ignored) that the postgres user can reach: a process
// running as root hands the cluster to that user. [Cluster.Discard] stops it
// and removes the directory.
func StartTemp(ctx context.Context, o Options) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "outflow-pg-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	o.Dir = dir
	c, err := Start(ctx, o)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// Discard stops the server and removes its directory, data included.
func (c *Cluster) Discard() {
	c.Stop()
	_ = os.RemoveAll(c.Dir)
}

// Restart stops the server (fast mode: every connection is cut) and starts it
// again with the same settings, as a crash test's database restart.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.pgCtl("-m", "fast", "-o", c.opts, "-l", filepath.Join(c.Dir, "server.log"), "-w", "restart"); err != nil {
		return err
	}
	return Ping(ctx, c.URL)
}

// Crash stops the server in immediate mode, as a crash of PostgreSQL would
// (no shutdown checkpoint; WAL still in the server's buffers, such as that
// of a commit that did not wait for the disk, is lost), and starts it again
// with the same settings.
func (c *Cluster) Crash(ctx context.Context) error {
	if err := c.pgCtl("-m", "immediate", "-w", "stop"); err != nil {
		return err
	}
	if err := c.pgCtl("-o", c.opts, "-l", filepath.Join(c.Dir, "server.log"), "-w", "start"); err != nil {
		return err
	}
	return Ping(ctx, c.URL)
}

func (c *Cluster) pgCtl(args ...string) error {
	cmd, err := asPostgresUser(c.Dir, filepath.Join(c.bin, "pg_ctl"), append([]string{"-D", filepath.Join(c.Dir, "data")}, args...)...)
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s", args[len(args)-1], err, out)
	}
	return nil
}

// Ping connects to url and pings it, within 3 seconds.
func Ping(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

func parseURL(url string) (*pgx.ConnConfig, error) { return pgx.ParseConfig(url) }

// WALLevel returns the wal_level of the server at url.
func WALLevel(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	return qWALLevel.Value(ctx, conn, namedsql.NoArgs{})
}

// LogicalOr returns url when its server runs with wal_level=logical, else
// the URL of a throwaway cluster started by [StartTemp] (which runs with
// it). level is url's server's wal_level, for the caller to say why; done
// discards the throwaway cluster, if any.
func LogicalOr(ctx context.Context, url string) (logicalURL, level string, done func(), err error) {
	level, err = WALLevel(ctx, url)
	if err != nil {
		return "", "", nil, err
	}
	if level == "logical" {
		return url, level, func() {}, nil
	}
	c, err := StartTemp(ctx, Options{})
	if err != nil {
		return "", level, nil, err
	}
	return c.URL, level, c.Discard, nil
}

// BinDir finds the directory holding initdb and pg_ctl.
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Strings(matches)
	if len(matches) == 0 {
		return "", fmt.Errorf("no initdb found: install PostgreSQL or set DATABASE_URL")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// asPostgresUser wraps a command so it runs as the postgres user when this
// process runs as root.
// blockedFromPostgres is, when this process runs as root (so that the
// cluster runs as the postgres user), the first directory on the way to dir
// that the postgres user may not enter, or "" when it may reach dir (or
// when this process is not root). Directories not yet there are made by
// Start, for root, and are not in the way.
func blockedFromPostgres(dir string) string {
	if os.Geteuid() != 0 {
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	var chain []string
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		p := chain[i]
		if _, err := os.Stat(p); err != nil {
			return "" // made by Start, reachable from its parent
		}
		if exec.Command("runuser", "-u", "postgres", "--", "test", "-x", p).Run() != nil {
			return p
		}
	}
	return ""
}

// modeOf is dir's permission bits, for a message.
func modeOf(dir string) string {
	fi, err := os.Stat(dir)
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%#o", fi.Mode().Perm())
}

func asPostgresUser(dir string, name string, args ...string) (*exec.Cmd, error) {
	if os.Geteuid() != 0 {
		return exec.Command(name, args...), nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to own the cluster: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := chownR(dir, uid, gid); err != nil {
		return nil, err
	}
	return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...), nil
}

func chownR(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
