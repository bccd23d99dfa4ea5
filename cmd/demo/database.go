package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outflow/outflow/internal/codec"
)

// demoDatabase is the demo's own database, on whichever server it runs: the
// demo never shares a database with anything else (a test, an application,
// or a demo of another checkout under another name).
const demoDatabase = "outflow_demo"

// prepareDemoDatabase returns the URL of database name on the server of
// serverURL, creating the database when it is missing. A database left by
// an earlier demo whose customer keys the demo's master keys cannot unwrap
// (another clone's .data/codec.keys) is recreated when the keys are the
// demo's own, saying so; with keys from the environment the demo refuses
// instead, since those may be the operator's. The schema is migrated
// afterwards (outboxctl migrate). fresh reports that the database was
// created (or recreated) by this call.
func prepareDemoDatabase(ctx context.Context, serverURL, name string, c *demoCodec, say func(string, ...any)) (dbURL string, fresh bool, err error) {
	dbURL, err = withDatabase(serverURL, name)
	if err != nil {
		return "", false, err
	}
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", false, fmt.Errorf("connect to the PostgreSQL server: %w", err)
	}
	defer admin.Close(ctx)
	exists, err := qDatabaseExists.Value(ctx, admin, databaseArgs{Name: name})
	if err != nil {
		return "", false, err
	}
	if !exists {
		if err := createDatabase(ctx, admin, name); err != nil {
			return "", false, err
		}
		say("created the demo's own database %s", name)
		return dbURL, true, nil
	}
	keys, err := codec.ParseKeys(c.keys)
	if err != nil {
		return "", false, err
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "", false, fmt.Errorf("connect to %s: %w", name, err)
	}
	mismatch := codec.CheckCustomerKeys(ctx, conn, keys)
	conn.Close(ctx)
	switch {
	case mismatch == nil:
		say("reusing the demo's own database %s", name)
		return dbURL, false, nil
	case !errors.Is(mismatch, codec.ErrKeysMismatch):
		return "", false, mismatch
	case !c.own:
		return "", false, fmt.Errorf("the database %s was made with other master keys than %s: %w\n"+
			"(the demo recreates it only with its own key in .data/codec.keys; to start over with these keys: dropdb %s)",
			name, c.how, mismatch, name)
	}
	say("the database %s was made by a demo with another key (another clone's .data/codec.keys, or a deleted one): "+
		"its customer keys do not unwrap with this clone's key %s (%s)", name, c.keyID, c.keyFile)
	say("recreating %s: that demo's orders and customer keys are dropped (its own Temporal histories stay in its .data/temporal.db)", name)
	if err := dropDatabase(ctx, admin, name); err != nil {
		return "", false, err
	}
	if err := createDatabase(ctx, admin, name); err != nil {
		return "", false, err
	}
	return dbURL, true, nil
}

// inventoryDatabase is the demo inventory service's own database, beside
// the demo's: the inventory is another team's service, with a database of
// its own (docs/inventory.md).
const inventoryDatabase = "outflow_demo_inventory"

// prepareInventoryDatabase returns the URL of the inventory's database name
// on the server of serverURL, creating it when missing. It follows the
// demo's own database: when that one was just created or recreated
// (orderFresh: a first run, or a demo of another clone before), the
// inventory's is recreated too, since its reservations belong to orders
// that are gone and its unrelayed events to that demo's Temporal. The
// inventory migrates its schema itself at start.
func prepareInventoryDatabase(ctx context.Context, serverURL, name string, orderFresh bool, say func(string, ...any)) (string, error) {
	dbURL, err := withDatabase(serverURL, name)
	if err != nil {
		return "", err
	}
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", fmt.Errorf("connect to the PostgreSQL server: %w", err)
	}
	defer admin.Close(ctx)
	exists, err := qDatabaseExists.Value(ctx, admin, databaseArgs{Name: name})
	if err != nil {
		return "", err
	}
	switch {
	case exists && !orderFresh:
		say("reusing the inventory's own database %s", name)
		return dbURL, nil
	case exists:
		say("recreating the inventory's database %s with the demo's: its reservations were for that database's orders", name)
		if err := dropDatabase(ctx, admin, name); err != nil {
			return "", err
		}
	default:
		say("created the inventory's own database %s", name)
	}
	return dbURL, createDatabase(ctx, admin, name)
}

func createDatabase(ctx context.Context, admin *pgx.Conn, name string) error {
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create the demo's database %s: %w (the role of DATABASE_URL needs CREATEDB, or create it yourself: createdb %s)", name, err, name)
	}
	return nil
}

// dropDatabase drops name and the replication slots a cdc relay left in
// it; it refuses while anyone is connected (another demo still running).
func dropDatabase(ctx context.Context, admin *pgx.Conn, name string) error {
	if _, err := qDropIdleSlots.Exec(ctx, admin, databaseArgs{Name: name}); err != nil {
		return fmt.Errorf("drop the replication slots of %s: %w", name, err)
	}
	_, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55006" { // object_in_use
		return fmt.Errorf("cannot recreate %s: it is in use (%s); is a demo of another clone still running? Stop it (Ctrl-C) and run the demo again", name, pgErr.Detail)
	}
	if err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}

// withDatabase is serverURL naming database name instead of its own, in
// either connection string form.
func withDatabase(serverURL, name string) (string, error) {
	if strings.HasPrefix(serverURL, "postgres://") || strings.HasPrefix(serverURL, "postgresql://") {
		u, err := url.Parse(serverURL)
		if err != nil {
			return "", fmt.Errorf("DATABASE_URL: %w", err)
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	return serverURL + " dbname=" + name, nil // keyword/value form: the last setting wins
}
