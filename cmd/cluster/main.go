// Command cluster runs a two-node Temporal cluster on PostgreSQL in the
// foreground, for `TEMPORAL_ADDRESS=... make demo`, the bench and manual
// work against the production shape (`make cluster`):
//
//	go run ./cmd/cluster [-nodes 2] [-port 7233] [-ui-port 8233] [-db outflow_temporal] [-fresh] [-retention 168h]
//
// It uses the PostgreSQL server of DATABASE_URL, else the local server on
// 127.0.0.1:5432, else a throwaway one under .data/cluster/postgres; creates
// (or reuses) the databases outflow_temporal and outflow_temporal_visibility
// there; starts the nodes (bin/temporal-server), a frontend balancer and the
// Web UI (bin/temporal-ui-server); registers the default namespace and the
// OrderId search attribute; prints TEMPORAL_ADDRESS=HOST:PORT once all of
// that is ready, and runs until Ctrl-C, which stops everything it started.
// See internal/dev/cluster and docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/dev/cluster"
	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// command is what `cluster -h` shows.
var command = cli.Command{
	Name:    "cluster",
	Summary: "a two-node Temporal cluster on PostgreSQL in the foreground (make cluster); prints TEMPORAL_ADDRESS=HOST:PORT when ready, stops everything on Ctrl-C.",
	Env: []cli.Var{
		{Name: "DATABASE_URL", Default: "the local server if it answers, else a throwaway one under .data/cluster/postgres", Meaning: "the PostgreSQL server of the Temporal databases"},
		{Name: cluster.ServerEnvVar, Default: "bin/temporal-server", Meaning: "the Temporal server binary (make bin/temporal-server)"},
		{Name: cluster.SQLToolEnvVar, Default: "bin/temporal-sql-tool", Meaning: "Temporal's SQL schema tool"},
		{Name: cluster.UIServerEnvVar, Default: "bin/temporal-ui-server", Meaning: "the Web UI server"},
	},
	Notes: "See docs/cluster.md.",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	os.Exit(cli.Report(os.Stderr, "cluster", err))
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	nodes := fs.Int("nodes", 2, "Temporal server processes, each running every service")
	port := fs.Int("port", 7233, "port of the frontend address (a free one if taken)")
	uiPort := fs.Int("ui-port", 8233, "port of the Web UI (a free one if taken; 0: no UI)")
	db := fs.String("db", cluster.DefaultDatabase, "main Temporal database; the visibility database is <db>_visibility")
	fresh := fs.Bool("fresh", false, "drop both Temporal databases first (all workflow histories are lost)")
	retention := fs.Duration("retention", cluster.DefaultRetention, "retention of the default namespace")
	shards := fs.Int("shards", cluster.DefaultHistoryShards, "history shards (fixed when the databases are first set up)")
	if err := command.Parse(fs, args, os.Stdout, os.Stderr); err != nil {
		return err
	}

	root, err := checkout.Root()
	if err != nil {
		return fmt.Errorf("%w: run it from inside the checkout (make cluster)", err)
	}
	dir := filepath.Join(root, ".data", "cluster")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pg, err := ensurePostgres(ctx, filepath.Join(dir, "postgres"))
	if err != nil {
		return err
	}
	if pg.Stop != nil {
		defer pg.Stop()
	}
	say("PostgreSQL: %s", pg.How)

	addr := "127.0.0.1:" + strconv.Itoa(*port)
	if !ports.AddrFree(addr) {
		addr = "127.0.0.1:0"
	}
	ui := *uiPort
	if ui != 0 && !ports.AddrFree("127.0.0.1:"+strconv.Itoa(ui)) {
		if ui, err = ports.Free(); err != nil {
			return err
		}
	}
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{
		Dir: dir, AdminURL: pg.URL, Database: *db, Fresh: *fresh,
		Nodes: *nodes, HistoryShards: *shards, Retention: *retention,
		Address: addr, UIPort: ui, Progress: os.Stdout,
	})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the nodes...")
		c.Stop()
		say("stopped")
	}()
	for i := 1; i <= c.Nodes(); i++ {
		say("node %d: pid %d, frontend %s, %d MiB resident, log %s", i, c.PID(i), c.Frontend(i), c.RSS(i)>>20, c.NodeLog(i))
	}
	main, vis := c.Databases()
	say("databases %s and %s; namespace %s with retention %s and the OrderId search attribute", main, vis, cluster.Namespace, c.Retention())
	if u := c.UIURL(); u != "" {
		say("Web UI: %s   histories from the CLI: bin/temporal workflow show --address %s -w <event id>", u, c.Address())
	}
	say("ready %s after start; Ctrl-C stops both nodes", time.Since(start).Round(100*time.Millisecond))
	if pg.Stop != nil {
		fmt.Printf("DATABASE_URL=%s\n", pg.URL)
	}
	fmt.Printf("TEMPORAL_ADDRESS=%s\n", c.Address())
	<-ctx.Done()
	return nil
}

func say(format string, args ...any) { fmt.Printf("cluster: "+format+"\n", args...) }
