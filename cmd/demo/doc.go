// Command demo is `make demo`: outflow's main job in one command.
//
// It reuses what is already there and prepares what is missing:
//
//   - PostgreSQL: the server of DATABASE_URL if set, else the local server on
//     127.0.0.1:5432 if it answers, else a throwaway cluster under
//     .data/postgres started from the machine's own initdb/pg_ctl (as the
//     postgres user when run as root); on it, the demo's own database
//     outflow_demo, created when missing. One made by a demo with another
//     key (another clone's .data/codec.keys) is recreated, saying so; with
//     keys from the environment the demo refuses instead;
//   - Temporal: TEMPORAL_ADDRESS if set, else a dev server with its Web UI and
//     the OrderId search attribute, built from the tools module (the first
//     build takes minutes) and persisting to .data/temporal.db;
//   - the provider simulators, the worker, the relay and the order API, built
//     into bin/ and started as child processes logging to .data/logs/;
//   - the inventory service (cmd/inventory) on its own database
//     outflow_demo_inventory on the same server, created when missing and
//     recreated whenever outflow_demo is (its reservations belong to that
//     database's orders), on INVENTORY_ADDR 127.0.0.1:8090 when free (else
//     a free port), relaying its answers as signals to the sagas; the
//     worker reaches it through INVENTORY_URL. The demo stocks the SKUs
//     its orders use at every run (POSTER-SOLDOUT at zero);
//   - webhooks: the simulator signs Stripe's webhooks with the demo's
//     STRIPE_WEBHOOK_SECRET and sends them to the order API's
//     POST /webhooks/stripe, which verifies them;
//   - payload encryption: OUTFLOW_CODEC_KEYS if set, else a demo key made on
//     the first run and kept in .data/codec.keys (the dev server keeps its
//     histories across runs), and bin/codecserver on CODECSERVER_ADDR
//     (default 127.0.0.1:8081), which the dev server's Web UI decodes
//     through (--ui-codec-endpoint, CORS for the UI's origin);
//   - tracing: OTEL_EXPORTER_OTLP_ENDPOINT if set, else Jaeger's all-in-one
//     (bin/jaeger, built from the tools module) on free ports, spans in
//     memory, its traces shown as pages on 127.0.0.1:16686 (or a free
//     port); the children export to it by the standard variables, and an
//     order's create and cancel carry a span of the demo's own
//     (outflow-demo), so the order's trace link shows the whole order;
//   - the outbox's web page: bin/outboxctl serve on 127.0.0.1:8099 when free
//     (else a free port), linking the Web UI and Jaeger, its actions behind
//     a token made for the run, printed beside the Web UI's address.
//
// It then places the scripted orders (among them one out of stock, an
// asynchronous payment settled by its webhook, and one whose webhooks come
// twice and out of order), waits for each to reach its final state, prints
// a summary table (with each order's reservation and its webhooks) with a
// Temporal UI link to every workflow, a trace link per order and how to see
// a history raw and decoded, and keeps the stack up until
// Ctrl-C. With DEMO_EXIT=1 it exits after the table, with status 0 only if
// every order matched its expectation.
package main
