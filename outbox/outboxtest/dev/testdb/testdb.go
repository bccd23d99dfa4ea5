// Package testdb gives each test its own freshly migrated PostgreSQL database.
//
// The first caller in a machine-wide critical section (an advisory lock)
// builds a template database from the embedded migrations of every set
// registered in the test binary (package schemaset: the outbox's always; an
// application's, such as outflow's order app, when its test links the
// package that registers them); its name carries a hash of those files, so
// a schema change or another set builds a new template. Each
// test then gets CREATE DATABASE ... TEMPLATE, which takes tens of
// milliseconds, and the database is dropped when the test ends.
//
// The server comes from TEST_DATABASE_URL, defaulting to
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable.
package testdb

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	_ "github.com/outflow/outflow/outbox" // registers the outbox's schema set, which migrateAll applies first
	"github.com/outflow/outflow/outbox/schemaset"
)

// DefaultURL is used when TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL is the server tests create their databases on.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// templates are the migrated template databases built in this process, by
// server URL.
var (
	templatesMu sync.Mutex
	templates   = map[string]string{}
)

// New creates a migrated database for t, returns a pool on it and its URL, and
// drops it when t ends.
func New(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := NewURL(t)
	return Open(t, url), url
}

// Open connects to url for t and closes the pool when t ends.
func Open(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatalf("testdb: connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewURL creates a migrated database for t and returns only its URL, for
// tests that hand it to a child process. The database is dropped when t ends.
func NewURL(t testing.TB) string {
	t.Helper()
	return NewURLOn(t, AdminURL())
}

// NewURLOn is [NewURL] on the server adminURL names (e.g. a [Logical] one).
func NewURLOn(t testing.TB, adminURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	templatesMu.Lock()
	name, ok := templates[adminURL]
	if !ok {
		var err error
		if name, err = ensureTemplate(ctx, adminURL); err != nil {
			templatesMu.Unlock()
			t.Fatalf("testdb: %v (is PostgreSQL running? set TEST_DATABASE_URL)", err)
		}
		templates[adminURL] = name
	}
	templatesMu.Unlock()
	return create(t, ctx, adminURL, name)
}

// NewEmptyURL creates a database with no schema at all, for tests of the
// migration path itself. It is dropped when t ends.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return create(t, ctx, AdminURL(), "template0")
}

func create(t testing.TB, ctx context.Context, adminURL, templateName string) string {
	t.Helper()
	name := "outflow_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("testdb: connect to %s: %v (is PostgreSQL running? set TEST_DATABASE_URL)", adminURL, err)
	}
	defer admin.Close(ctx)
	// The template may be busy for a moment while another test copies it.
	var lastErr error
	for range 50 {
		_, lastErr = admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", name, templateName))
		if lastErr == nil || !strings.Contains(lastErr.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("testdb: create database: %v", lastErr)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			t.Logf("testdb: drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		// A logical replication slot keeps its database from being dropped.
		if err := dropSlots(ctx, conn, name); err != nil {
			t.Logf("testdb: drop the replication slots of %s: %v", name, err)
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Logf("testdb: drop %s: %v", name, err)
		}
	})
	return withDatabase(adminURL, name)
}

// withDatabase returns url with its database name replaced.
func withDatabase(url, name string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url
	}
	prefix, query, _ := strings.Cut(url, "?")
	i := strings.LastIndex(prefix, "/")
	if i < len("postgres://") || cfg.Database == "" {
		prefix += "/"
		i = len(prefix) - 1
	}
	out := prefix[:i+1] + name
	if query != "" {
		out += "?" + query
	}
	return out
}

// migrationsHash names the template after every registered migration set's
// files: a binary that links more sets gets a template of its own.
func migrationsHash() (string, error) {
	return schemaset.Fingerprint(schemaset.All()...)
}

func ensureTemplate(ctx context.Context, adminURL string) (string, error) {
	hash, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "outflow_tmpl_" + hash
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", adminURL, err)
	}
	defer admin.Close(ctx)
	// One builder at a time across every test process on the machine.
	if _, err := qLockTemplates.Exec(ctx, admin, lockArgs{LockKey: templateLock}); err != nil {
		return "", err
	}
	defer qUnlockTemplates.Exec(context.Background(), admin, lockArgs{LockKey: templateLock}) //nolint:errcheck
	ready, err := qTemplateReady.Value(ctx, admin, databaseArgs{Name: name})
	if err != nil || ready {
		return name, err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s", name)); err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, withDatabase(adminURL, name))
	if err != nil {
		return "", err
	}
	err = migrateAll(ctx, pool)
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH is_template true", name)); err != nil {
		return "", err
	}
	return name, nil
}

// Scratch creates a database with no schema at all on the test server, for
// code that runs without a testing.T: a package's Example functions, which
// migrate it as a service would. TestMain calls it before m.Run and drop
// after; drop reports a failure on stderr (the name is unique, so a
// leftover database harms no other test).
func Scratch(ctx context.Context) (url string, drop func(), err error) {
	adminURL := AdminURL()
	name := "outflow_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("testdb: connect to %s: %w (is PostgreSQL running? set TEST_DATABASE_URL)", adminURL, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE template0", name)); err != nil {
		return "", nil, fmt.Errorf("testdb: create database: %w", err)
	}
	drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err == nil {
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "testdb: drop %s: %v\n", name, err)
		}
	}
	return withDatabase(adminURL, name), drop, nil
}

// ScratchEnv is for a TestMain whose Example functions read a database URL
// from the environment as a service would: it creates a [Scratch] database,
// sets env to its URL and returns the function that drops it. It ends the
// process when the database cannot be created.
func ScratchEnv(env string) (drop func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, drop, err := Scratch(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(env, url)
	return drop
}

// migrateAll applies every registered set in the order of registration
// (the outbox's first: a set registered by a package that imports outbox
// comes after it), as `outboxctl migrate` does.
func migrateAll(ctx context.Context, pool *pgxpool.Pool) error {
	for _, s := range schemaset.All() {
		if _, err := s.Up(ctx, pool, nil); err != nil {
			return fmt.Errorf("%s: %w", s.Table, err)
		}
	}
	return nil
}
