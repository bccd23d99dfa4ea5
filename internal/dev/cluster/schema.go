package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// The embedded schemas of go.temporal.io/server v1.29.1 the schema tool
// applies (schema/postgresql/v12/... in the module).
const (
	mainSchema       = "postgresql/v12/temporal"
	visibilitySchema = "postgresql/v12/visibility"
)

// setupDatabases creates the two databases unless they exist (dropping them
// first when Fresh) and brings both schemas to the server's version: the
// schema tool's setup-schema -v 0.0 then update-schema, both of which leave
// an up-to-date database as it is.
func (c *Cluster) setupDatabases(ctx context.Context) error {
	start := time.Now()
	conn, err := pgx.Connect(ctx, c.opts.AdminURL)
	if err != nil {
		return fmt.Errorf("cluster: connect to PostgreSQL for the Temporal databases: %w", err)
	}
	defer conn.Close(ctx)
	if c.opts.Fresh {
		for _, db := range []string{c.opts.Database, c.visibility} {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("cluster: drop %s: %w", db, err)
			}
		}
	}
	created := 0
	for _, db := range []string{c.opts.Database, c.visibility} {
		exists, err := qDatabaseExists.Value(ctx, conn, databaseArgs{Name: db})
		if err != nil {
			return err
		}
		if exists {
			continue
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			return fmt.Errorf("cluster: create database %s: %w", db, err)
		}
		created++
	}
	for _, s := range []struct{ db, schema string }{{c.opts.Database, mainSchema}, {c.visibility, visibilitySchema}} {
		if err := c.sqlTool(ctx, s.db, "setup-schema", "-v", "0.0"); err != nil {
			return err
		}
		if err := c.sqlTool(ctx, s.db, "update-schema", "--schema-name", s.schema); err != nil {
			return err
		}
	}
	verb := "reused"
	if created > 0 {
		verb = "created"
	}
	c.say("databases %s and schemas applied with temporal-sql-tool in %s", verb, time.Since(start).Round(10*time.Millisecond))
	return nil
}

// sqlTool runs one command of Temporal's SQL schema tool on db.
func (c *Cluster) sqlTool(ctx context.Context, db string, args ...string) error {
	base := []string{"--plugin", "postgres12", "--ep", c.pg.host, "--port", strconv.Itoa(c.pg.port),
		"--user", c.pg.user, "--db", db}
	if c.pg.password != "" {
		base = append(base, "--password", c.pg.password)
	}
	cmd := exec.CommandContext(ctx, c.opts.SQLToolBin, append(base, args...)...)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster: temporal-sql-tool %s on %s: %v\n%s", args[0], db, err, out)
	}
	// The tool logs errors and still exits 0 in some versions; its log
	// says ERROR then.
	if containsError(out) {
		return fmt.Errorf("cluster: temporal-sql-tool %s on %s failed:\n%s", args[0], db, out)
	}
	return nil
}

func containsError(out []byte) bool {
	for _, marker := range []string{"\tERROR\t", "\x1b[31mERROR\x1b[0m", "\tFATAL\t"} {
		if bytes.Contains(out, []byte(marker)) {
			return true
		}
	}
	return false
}

// dropDatabases drops both databases, closing any connection left.
func (c *Cluster) dropDatabases(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.opts.AdminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, db := range []string{c.opts.Database, c.visibility} {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("cluster: drop %s: %w", db, err)
		}
	}
	return nil
}
