package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/database"
)

// This file follows cmd/demo/postgres.go: the same three sources of a
// PostgreSQL server, with the throwaway one in a directory of its own
// (.data/cluster/postgres), so `make demo` and `make cluster` never start
// the same data directory twice.

// postgres is the server the Temporal databases live on; stop is non-nil
// only when this command started the server itself.
type postgres struct {
	url  string
	how  string
	stop func()
}

// ensurePostgres reuses DATABASE_URL, else the local default server, else
// starts a throwaway cluster in dir.
func ensurePostgres(ctx context.Context, dir string) (*postgres, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		if err := ping(ctx, u); err != nil {
			return nil, fmt.Errorf("DATABASE_URL is set but does not answer: %w", err)
		}
		return &postgres{url: u, how: "DATABASE_URL"}, nil
	}
	if err := ping(ctx, database.DefaultURL); err == nil {
		return &postgres{url: database.DefaultURL, how: "local server on 127.0.0.1:5432"}, nil
	}
	say("no PostgreSQL answers on 127.0.0.1:5432; starting a throwaway server in %s", dir)
	return startCluster(ctx, dir)
}

func ping(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// pgBinDir finds the directory holding initdb and pg_ctl.
func pgBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := string(out[:len(out)-1])
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

// asPostgresUser wraps a command so it runs as the postgres user when the
// demo runs as root (initdb and postgres refuse to run as root).
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

func startCluster(ctx context.Context, dir string) (*postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	pgdata := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); err != nil {
		if err := os.MkdirAll(pgdata, 0o700); err != nil {
			return nil, err
		}
		cmd, err := asPostgresUser(dir, filepath.Join(bin, "initdb"), "-D", pgdata, "-U", "postgres", "--auth=trust", "--no-sync")
		if err != nil {
			return nil, err
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %v\n%s", err, out)
		}
	}
	port := 55433
	if !portFree(fmt.Sprintf("127.0.0.1:%d", port)) {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
	cmd, err := asPostgresUser(dir, filepath.Join(bin, "pg_ctl"), "-D", pgdata, "-o", opts, "-l", filepath.Join(dir, "server.log"), "-w", "start")
	if err != nil {
		return nil, err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	stop := func() {
		if c, err := asPostgresUser(dir, filepath.Join(bin, "pg_ctl"), "-D", pgdata, "-m", "fast", "-w", "stop"); err == nil {
			_ = c.Run()
		}
	}
	if err := ping(ctx, url); err != nil {
		stop()
		return nil, fmt.Errorf("the throwaway cluster started but does not answer: %w", err)
	}
	return &postgres{url: url, how: "throwaway server in " + dir, stop: stop}, nil
}
