package pgcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Server is the PostgreSQL server a command runs on.
type Server struct {
	URL string
	// How says where it came from, for the command's log.
	How string
	// Stop is non-nil only when the command started the server itself.
	Stop func()
}

// EnsureOptions say where [Ensure] looks for a server.
type EnsureOptions struct {
	// Dir is the throwaway cluster's directory. Mandatory.
	Dir string
	// DefaultURL is tried when DATABASE_URL is unset. Mandatory.
	DefaultURL string
	// PreferredPort is the throwaway cluster's port when free. Optional.
	PreferredPort int
	// Logical: the server must run with wal_level=logical (the CDC relay
	// source); a reused server without it is passed over for the throwaway
	// cluster, which runs with it.
	Logical bool
	// Say reports each decision. Mandatory.
	Say func(format string, args ...any)
}

// Ensure reuses DATABASE_URL if set, else the server at DefaultURL if it
// answers, else starts a throwaway cluster in Dir (wal_level=logical, so it
// serves both relay sources). With Logical, a reused server must have
// wal_level=logical; one without it is passed over, and Say tells why.
func Ensure(ctx context.Context, o EnsureOptions) (*Server, error) {
	reuse := func(url, how string) (*Server, bool, error) {
		if !o.Logical {
			return &Server{URL: url, How: how}, true, nil
		}
		level, err := WALLevel(ctx, url)
		if err != nil {
			return nil, false, err
		}
		if level == "logical" {
			return &Server{URL: url, How: how}, true, nil
		}
		o.Say("the %s runs with wal_level=%s, and OUTFLOW_RELAY_SOURCE=cdc needs wal_level=logical "+
			"(changing it needs a restart of that server); starting a throwaway cluster instead", how, level)
		return nil, false, nil
	}
	if u := os.Getenv("DATABASE_URL"); u != "" {
		if err := Ping(ctx, u); err != nil {
			return nil, fmt.Errorf("DATABASE_URL is set but does not answer: %w", err)
		}
		if s, ok, err := reuse(u, "server of DATABASE_URL"); ok || err != nil {
			return s, err
		}
	} else if err := Ping(ctx, o.DefaultURL); err == nil {
		if s, ok, err := reuse(o.DefaultURL, "local server on "+hostPort(o.DefaultURL)); ok || err != nil {
			return s, err
		}
	} else {
		o.Say("no PostgreSQL answers at %s; starting a throwaway cluster in %s", hostPort(o.DefaultURL), o.Dir)
	}
	dir := o.Dir
	if blocked := blockedFromPostgres(dir); blocked != "" {
		dir = reachableDir(dir)
		o.Say("the postgres user, who owns a cluster started as root, cannot enter %s (mode %s); "+
			"the throwaway cluster goes to %s instead", blocked, modeOf(blocked), dir)
	}
	c, err := Start(ctx, Options{Dir: dir, PreferredPort: o.PreferredPort})
	if err != nil {
		return nil, err
	}
	return &Server{URL: c.URL, How: "throwaway cluster in " + dir + " (wal_level=logical)", Stop: c.Stop}, nil
}

// reachableDir is where a throwaway cluster of dir goes when the postgres
// user cannot reach dir: a directory under the system's temporary
// directory named for dir, so that the next run of the same checkout finds
// the same cluster again.
func reachableDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "outflow-pg-"+hex.EncodeToString(sum[:6]))
}

func hostPort(url string) string {
	cfg, err := parseURL(url)
	if err != nil {
		return url
	}
	return fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
}
