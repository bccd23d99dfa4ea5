package main

import "github.com/outflow/outflow/internal/cli"

// command is what `demo -h` shows: every variable the demo reads.
var command = cli.Command{
	Name:    "demo",
	Summary: "outflow's demo (make demo): prepares what is missing, runs worker, relay, order API and inventory service, places the scripted orders, prints the summary and keeps the stack up until Ctrl-C.",
	Env: []cli.Var{
		{Name: "DEMO_EXIT", Meaning: "1: exit after the summary, 0 only if every scripted order reached its expected state"},
		{Name: "OUTFLOW_RELAY_SOURCE", Default: "poll", Meaning: "poll, cdc or log, recorded in the demo's databases with `outboxctl source set`, which every process follows (cdc needs wal_level=logical: else the demo starts a throwaway cluster)"},
		{Name: "DATABASE_URL", Default: "the local server if it answers, else a throwaway cluster under .data/", Meaning: "the PostgreSQL server; the demo works in its own database " + demoDatabase + " there, and its inventory service in " + inventoryDatabase},
		{Name: "TEMPORAL_ADDRESS", Default: "a dev server started from bin/temporal", Meaning: "a Temporal frontend to reuse, host:port"},
		{Name: "TEMPORAL_NAMESPACE", Default: "default", Meaning: "the namespace on TEMPORAL_ADDRESS"},
		{Name: "TEMPORAL_UI_URL", Meaning: "the Web UI of TEMPORAL_ADDRESS, printed and allowed by the codec server"},
		{Name: "OUTFLOW_CODEC_KEYS, OUTFLOW_CODEC_KEYS_FILE", Default: "a demo key in .data/codec.keys", Meaning: "the payload encryption keys"},
		{Name: "CODECSERVER_ADDR", Default: "127.0.0.1:8081, else a free port", Meaning: "the codec server's listen address"},
		{Name: "CODECSERVER_TOKEN", Default: "none", Meaning: "the codec server's bearer token"},
		{Name: "CODECSERVER_CORS_ORIGIN", Default: "the dev server's Web UI", Meaning: "the Web UI origin the codec server allows"},
	},
	Notes: "See README.md (make demo) and docs/reference.md.",
}
