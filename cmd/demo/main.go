package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
	"github.com/outflow/outflow/providersim"
)

func main() {
	if err := command.Parse(flag.NewFlagSet("demo", flag.ContinueOnError), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(cli.ExitCode(err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	os.Exit(cli.Report(os.Stderr, "demo", err))
}

func say(format string, args ...any) {
	fmt.Printf("demo: "+format+"\n", args...)
}

// stack is everything the demo started, stopped in reverse order.
type stack struct{ stops []func() }

func (s *stack) add(f func()) { s.stops = append(s.stops, f) }
func (s *stack) stopAll() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

func run(ctx context.Context) error {
	root, err := checkout.Root()
	if err != nil {
		return fmt.Errorf("%w: run the demo from inside the checkout (make demo)", err)
	}
	dataDir := filepath.Join(root, ".data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	exitAfter := os.Getenv("DEMO_EXIT") == "1"
	var st stack
	defer st.stopAll()

	source := os.Getenv("OUTFLOW_RELAY_SOURCE")
	switch source {
	case "":
		source = "poll"
	case "poll", "cdc", "log":
	default:
		return cli.Config(fmt.Errorf("OUTFLOW_RELAY_SOURCE=%q: want poll (the default), cdc or log", source))
	}
	pg, err := ensurePostgres(ctx, dataDir, source == "cdc", say)
	if err != nil {
		return err
	}
	if pg.Stop != nil {
		st.add(pg.Stop)
	}
	say("PostgreSQL: %s", pg.How)
	say("relay source: %s (OUTFLOW_RELAY_SOURCE; recorded in the databases with outboxctl source set)", source)

	// Payload encryption is on: a demo key (kept in .data/codec.keys), and a
	// codec server the Web UI decodes through (docs/privacy.md).
	pc, err := demoCodecKeys(dataDir)
	if err != nil {
		return err
	}
	dbURL, fresh, err := prepareDemoDatabase(ctx, pg.URL, demoDatabase, pc, say)
	if err != nil {
		return err
	}
	invDBURL, err := prepareInventoryDatabase(ctx, pg.URL, inventoryDatabase, fresh, say)
	if err != nil {
		return err
	}

	say("building outflow's binaries into bin/")
	if err := buildBinaries(ctx, root); err != nil {
		return err
	}
	bin := func(name string) string { return filepath.Join(root, "bin", name) }
	// Tracing before the children start: they inherit OTEL_EXPORTER_OTLP_ENDPOINT.
	tr, err := ensureTracing(ctx, root, dataDir)
	if err != nil {
		return err
	}
	st.add(tr.stop)
	say("tracing: the binaries export to %s (%s)", tr.endpoint, tr.how)
	migrate := exec.CommandContext(ctx, bin("outboxctl"), "migrate", "--order-app")
	migrate.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("outboxctl migrate: %v\n%s", err, out)
	} else {
		say("outboxctl migrate (%s): %s", demoDatabase, strings.TrimSpace(lastLine(string(out))))
	}
	if err := setSource(ctx, bin("outboxctl"), dbURL, source); err != nil {
		return err
	}

	if pc.addr, err = codecServerAddr(); err != nil {
		return err
	}
	tmp, err := ensureTemporal(ctx, root, dataDir, say, pc.endpoint())
	if err != nil {
		return err
	}
	if tmp.proc != nil {
		st.add(func() { tmp.proc.Stop(10 * time.Second) })
	}
	say("Temporal: %s at %s (namespace %s)", tmp.how, tmp.address, tmp.namespace)
	uiOrigin := tmp.uiURL
	if uiOrigin == "" {
		uiOrigin = os.Getenv("CODECSERVER_CORS_ORIGIN")
	}
	if err := startCodecServer(ctx, dataDir, bin("codecserver"), pc, dbURL, uiOrigin); err != nil {
		return err
	}
	st.add(func() { pc.proc.Stop(5 * time.Second) })
	say("payload encryption on (key %s: %s); codec server at %s for the CLI and the Web UI", pc.keyID, pc.how, pc.endpoint())

	apiAddr, err := preferredAddr(8080)
	if err != nil {
		return err
	}
	simPort, err := ports.Free()
	if err != nil {
		return err
	}
	simURL := fmt.Sprintf("http://127.0.0.1:%d", simPort)
	// The simulator sends Stripe's webhooks, signed, to the order API,
	// which verifies them with the same secret.
	sim, err := startChild(dataDir, "providersim", bin("providersim"), nil, []string{fmt.Sprintf("PROVIDERSIM_ADDR=127.0.0.1:%d", simPort),
		"PROVIDERSIM_WEBHOOK_URL=http://" + apiAddr + "/webhooks/stripe", "STRIPE_WEBHOOK_SECRET=" + webhookSecret})
	if err != nil {
		return err
	}
	st.add(func() { sim.Stop(5 * time.Second) })
	if err := ports.WaitTCP(ctx, fmt.Sprintf("127.0.0.1:%d", simPort), 30*time.Second); err != nil {
		return fmt.Errorf("providersim: %w (see %s)", err, sim.LogPath())
	}
	say("provider simulators (Stripe-compatible payments, Resend-compatible email) at %s, sending signed webhooks to http://%s/webhooks/stripe", simURL, apiAddr)

	// The inventory service: its own database, its own relay delivering
	// its answers as signals to the orders' sagas (docs/inventory.md).
	invAddr, err := preferredAddr(8090)
	if err != nil {
		return err
	}
	invMetrics, err := metricsAddr("inventory")
	if err != nil {
		return err
	}
	taskQueue := os.Getenv("OUTFLOW_TASK_QUEUE")
	if taskQueue == "" {
		taskQueue = "orders"
	}
	inventory, err := startChild(dataDir, "inventory", bin("inventory"), nil, []string{
		"INVENTORY_DATABASE_URL=" + invDBURL,
		"INVENTORY_ADDR=" + invAddr,
		"INVENTORY_SAGA_TASK_QUEUE=" + taskQueue,
		"INVENTORY_CLOSED_WORKFLOW=" + inventoryLateEventWorkflow,
		"INVENTORY_SIGNAL=",
		"INVENTORY_SAGA_WORKFLOW=",
		"TEMPORAL_ADDRESS=" + tmp.address,
		"TEMPORAL_NAMESPACE=" + tmp.namespace,
		"METRICS_ADDR=" + invMetrics,
		"OUTFLOW_FAILPOINTS=",
	})
	if err != nil {
		return err
	}
	st.add(func() { inventory.Stop(10 * time.Second) })
	if err := waitLog(ctx, inventory, "listening", 60*time.Second); err != nil {
		return fmt.Errorf("inventory: %w (see %s)", err, inventory.LogPath())
	}
	inv := &inventoryAPI{orderAPI{base: "http://" + invAddr, http: &http.Client{Timeout: 15 * time.Second}}}
	stocked, err := inv.stockAll(ctx)
	if err != nil {
		return fmt.Errorf("inventory: %w (see %s)", err, inventory.LogPath())
	}
	say("inventory service at http://%s (database %s), stocked: %s", invAddr, inventoryDatabase, stocked)
	// The inventory's database (migrated by the service at start) polls or
	// uses the log; its relay has no cdc.
	if err := setSource(ctx, bin("outboxctl"), invDBURL, inventorySource(source)); err != nil {
		return err
	}

	common := []string{
		"DATABASE_URL=" + dbURL,
		"TEMPORAL_ADDRESS=" + tmp.address,
		"TEMPORAL_NAMESPACE=" + tmp.namespace,
		"STRIPE_API_KEY=sk_test_outflow_demo",
		"STRIPE_API_BASE=" + simURL,
		"EMAIL_API_KEY=re_outflow_demo",
		"EMAIL_API_BASE=" + simURL,
		"OUTFLOW_FAILPOINTS=",
		"OUTFLOW_CODEC_KEYS=" + pc.keys,
		"OUTFLOW_CODEC_KEYS_FILE=",
		"OUTFLOW_RELAY_SOURCE=",
	}
	starterMetrics, err := metricsAddr("starter")
	if err != nil {
		return err
	}
	workerMetrics, err := metricsAddr("worker")
	if err != nil {
		return err
	}
	worker, err := startChild(dataDir, "worker", bin("worker"), nil, append(common, "METRICS_ADDR="+workerMetrics, "INVENTORY_URL=http://"+invAddr))
	if err != nil {
		return err
	}
	st.add(func() { worker.Stop(15 * time.Second) })
	relay, err := startChild(dataDir, "starter", bin("starter"), nil, append(common, "METRICS_ADDR="+starterMetrics))
	if err != nil {
		return err
	}
	st.add(func() { relay.Stop(15 * time.Second) })
	api, err := startChild(dataDir, "orderapi", bin("orderapi"), nil, append(common, "ORDERAPI_ADDR="+apiAddr, "ORDERAPI_TOKEN=", "STRIPE_WEBHOOK_SECRET="+webhookSecret))
	if err != nil {
		return err
	}
	st.add(func() { api.Stop(10 * time.Second) })
	for _, c := range []*proc.Process{worker, relay} {
		if err := waitLog(ctx, c, "started", 60*time.Second); err != nil {
			return err
		}
	}
	if err := ports.WaitTCP(ctx, apiAddr, 30*time.Second); err != nil {
		return fmt.Errorf("orderapi: %w (see %s)", err, api.LogPath())
	}
	say("worker, relay and order API (http://%s) are up; logs in %s", apiAddr, filepath.Join(dataDir, "logs"))
	console, stopConsole, err := startConsole(ctx, dataDir, bin("outboxctl"), dbURL, tmp.uiURL, tr.ui)
	if err != nil {
		return err
	}
	st.add(stopConsole)
	promConfig, err := writePrometheusConfig(dataDir, root, map[string]string{"starter": starterMetrics, "worker": workerMetrics, "orderapi": apiAddr, "inventory": invMetrics})
	if err != nil {
		return err
	}
	say("metrics: relay http://%s/metrics, worker http://%s/metrics, order API http://%s/metrics, inventory http://%s/metrics; "+
		"to watch them with the alert rules: prometheus --config.file=%s", starterMetrics, workerMetrics, apiAddr, invMetrics, promConfig)

	orders := &orderAPI{base: "http://" + apiAddr, http: &http.Client{Timeout: 15 * time.Second}}
	simClient := &providersim.Client{BaseURL: simURL, HTTP: &http.Client{Timeout: 10 * time.Second}}
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", demoDatabase, err)
	}
	defer db.Close(context.WithoutCancel(ctx))
	results, err := runScenarios(ctx, orders, inv, simClient, db, tmp)
	if err != nil {
		return err
	}
	for i := range results {
		if results[i].traceID != "" {
			results[i].traceURL = tr.link(results[i].traceID)
		}
	}
	fmt.Println()
	allOK := printTable(os.Stdout, results)
	fmt.Println()
	if tmp.uiURL != "" {
		say("Temporal Web UI: %s (search: OrderId=\"<order id>\")", tmp.uiURL)
	}
	say("outbox console: %s (pending, quarantined, one event; actions: sign in with token %s)", console.url(), console.token)
	if tr.ui != "" {
		say("traces: %s/trace/<id> (the demo's page over Jaeger's API, %s/api/traces/<id>: Jaeger built from the module proxy has no UI)", tr.viewer, tr.ui)
	}
	say("order API: http://%s   inventory: http://%s/stock/BOOK-DDIA   provider ledger: %s/_sim/ledger   webhooks: %s/_sim/webhooks", apiAddr, invAddr, simURL, simURL)
	fmt.Println()
	printCodecHowTo(os.Stdout, pc, tmp, tmp.cli, dbURL, results)
	fmt.Println()
	if exitAfter {
		if !allOK {
			return errors.New("some orders did not reach their expected final state (see MISMATCH lines)")
		}
		say("every scripted order reached its expected final state")
		return nil
	}
	say("the stack keeps running; press Ctrl-C to stop everything the demo started")
	<-ctx.Done()
	say("stopping...")
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// buildBinaries builds the stack's binaries into bin/; Go's build cache makes
// a second run fast.
func buildBinaries(ctx context.Context, root string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(root, "bin")+"/",
		"./worker", "./starter", "./cmd/orderapi", "./cmd/providersim", "./cmd/outboxctl", "./cmd/codecserver", "./cmd/inventory")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}

// webhookSecret is the demo's Stripe webhook signing secret: the
// simulator signs with it, the order API verifies with it.
const webhookSecret = "whsec_outflow_demo"

// preferredAddr is 127.0.0.1:port when that port is free, else a loopback
// address on a port the kernel picks.
func preferredAddr(port int) (string, error) {
	if ports.IsFree(port) {
		return fmt.Sprintf("127.0.0.1:%d", port), nil
	}
	p, err := ports.Free()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// newKey returns an Idempotency-Key for one scripted order.
func newKey(name string) string {
	return "demo-" + strings.ReplaceAll(name, " ", "-") + "-" + uuid.NewString()[:8]
}

// inventoryLateEventWorkflow is the worker's workflow for an inventory event
// whose saga has closed (workflows.InventoryLateEventWorkflowName, which a
// test holds it to): named here so the demo, which starts the binaries,
// links none of the workflows' code and the payment provider's client.
const inventoryLateEventWorkflow = "InventoryLateEventWorkflow"

// setSource records source in the database at url as an operator does,
// `outboxctl source set SOURCE --yes`; the processes follow it.
func setSource(ctx context.Context, outboxctl, url, source string) error {
	cmd := exec.CommandContext(ctx, outboxctl, "source", "set", source, "--yes", "--reason", "make demo", "--actor", "make demo")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("outboxctl source set %s: %v\n%s", source, err, out)
	}
	return nil
}

// inventorySource is the inventory database's source for the demo's
// source: its relay polls outbox_events unless the demo runs the log.
func inventorySource(source string) string {
	if source == "log" {
		return "log"
	}
	return "poll"
}
