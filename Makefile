# outflow — the two commands a newcomer needs are `make demo` and `make test`.
GO      ?= go
BIN     := $(CURDIR)/bin
TEMPORAL := $(BIN)/temporal

# Tests find the Temporal CLI here (testsuite.StartDevServer gets ExistingPath,
# never a download).
export OUTFLOW_TEMPORAL_CLI := $(TEMPORAL)
export OUTFLOW_PROMTOOL := $(BIN)/promtool
# The trace backend of `make demo` and of the test that its trace links
# resolve: Jaeger's all-in-one, built from the tools module.
JAEGER := $(BIN)/jaeger
export OUTFLOW_JAEGER := $(JAEGER)
# The Temporal server, its SQL schema tool and the Web UI server, for the
# two-node cluster on PostgreSQL (`make cluster`, `make test-cluster`).
TEMPORAL_SERVER := $(BIN)/temporal-server
TEMPORAL_SQL_TOOL := $(BIN)/temporal-sql-tool
TEMPORAL_UI_SERVER := $(BIN)/temporal-ui-server
export OUTFLOW_TEMPORAL_SERVER := $(TEMPORAL_SERVER)
export OUTFLOW_TEMPORAL_SQL_TOOL := $(TEMPORAL_SQL_TOOL)
export OUTFLOW_TEMPORAL_UI_SERVER := $(TEMPORAL_UI_SERVER)

.PHONY: help test lint tools demo soak clean

# Every target a user runs has one "## target: summary" line, which
# `make help` lists; "#" lines below it say more.

## help: list these targets, one line each.
help:
	@echo "make targets (details in the Makefile and README.md):"
	@sed -n 's/^## \([a-zA-Z_-]*\): \(.*\)/  \1\t\2/p' $(MAKEFILE_LIST) | expand -t 16

# The Temporal CLI is built from the Go module proxy through the separate
# tools module, so the main go.mod stays lean. The first build takes minutes;
# Go's build cache makes the next ones fast.
$(TEMPORAL): tools/go.mod tools/go.sum
	@echo "building the Temporal CLI from the tools module (first build takes a few minutes)..."
	cd tools && $(GO) build -o $(TEMPORAL) github.com/temporalio/cli/cmd/temporal
	@touch $(TEMPORAL)

# The server, schema tool and UI server come from the same tools module as
# the CLI (which embeds go.temporal.io/server v1.29.1 and ui-server v2.42.1),
# so they share its go.sum and most of its build cache: a minute once the CLI
# is built, about ten minutes from nothing on a busy 2-core machine.
$(TEMPORAL_SERVER): tools/go.mod tools/go.sum
	@echo "building the Temporal server (go.temporal.io/server/cmd/server) from the tools module..."
	cd tools && $(GO) build -o $(TEMPORAL_SERVER) go.temporal.io/server/cmd/server
	@touch $(TEMPORAL_SERVER)

$(TEMPORAL_SQL_TOOL): tools/go.mod tools/go.sum
	cd tools && $(GO) build -o $(TEMPORAL_SQL_TOOL) go.temporal.io/server/cmd/tools/sql
	@touch $(TEMPORAL_SQL_TOOL)

$(TEMPORAL_UI_SERVER): tools/go.mod tools/go.sum
	cd tools && $(GO) build -o $(TEMPORAL_UI_SERVER) github.com/temporalio/ui-server/v2/cmd/server
	@touch $(TEMPORAL_UI_SERVER)

# Jaeger v1.75's all-in-one (the v2 binary: an OpenTelemetry collector with
# Jaeger's storage and query), from a tools module of its own (tools/jaeger:
# its graph must not move the Temporal binaries'). Built from the module
# proxy it has no UI assets: its /trace/ID page is a placeholder, its
# /api/traces/ID the trace, which make demo shows as a page of its own.
$(JAEGER): tools/jaeger/go.mod tools/jaeger/go.sum
	@echo "building Jaeger (github.com/jaegertracing/jaeger/cmd/jaeger) from tools/jaeger..."
	cd tools/jaeger && $(GO) build -o $(JAEGER) github.com/jaegertracing/jaeger/cmd/jaeger
	@touch $(JAEGER)

$(BIN)/staticcheck: tools/lint/go.mod tools/lint/go.sum
	cd tools/lint && $(GO) build -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck

$(BIN)/workflowcheck: tools/lint/go.mod tools/lint/go.sum
	cd tools/lint && $(GO) build -o $(BIN)/workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck

$(BIN)/promtool: tools/promtool/go.mod tools/promtool/go.sum
	@echo "building promtool from tools/promtool (first build takes a few minutes)..."
	cd tools/promtool && $(GO) build -o $(BIN)/promtool github.com/prometheus/prometheus/cmd/promtool

## promtool: build bin/promtool (Prometheus's rule checker, for the alert tests).
.PHONY: promtool
promtool: $(BIN)/promtool

## tools: build every tool binary into bin/ (Temporal CLI, server, SQL tool, UI server, Jaeger, staticcheck, workflowcheck, promtool).
tools: $(TEMPORAL) $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL) $(TEMPORAL_UI_SERVER) $(JAEGER) $(BIN)/staticcheck $(BIN)/workflowcheck $(BIN)/promtool

# LIB_MODULES are the library's modules (outbox/, and the JetStream sink,
# a module of its own): the root's ./... does not reach into them. The root
# requires both (replace directives), so one `go test` runs their packages
# beside the root's, sharing one -p schedule as when they were one module.
LIB_MODULES := outbox outbox/natspub
LIB_PACKAGES := github.com/outflow/outflow/outbox/... github.com/outflow/outflow/outbox/natspub/...

# The Debian packages the tests need beyond Go's tools: spin and gcc (the
# model check), chromium (the browser tests). Installed when missing and
# apt-get can (root); otherwise the command to run is printed.
TEST_DEBS := spin gcc chromium
.PHONY: debs
debs:
	@missing=""; for p in $(TEST_DEBS); do command -v $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing the Debian packages$$missing"; apt-get update -q && apt-get install -y -q$$missing; \
	  else echo "make test needs$$missing: sudo apt-get install$$missing"; exit 1; fi; \
	fi

## test: every test, unit and integration (real PostgreSQL, real Temporal dev server), of the root, the library's modules and the deploy module (compose, dashboard, alerts).
test: debs $(TEMPORAL) $(BIN)/promtool $(TEMPORAL_SQL_TOOL) $(JAEGER)
	$(GO) test -count=1 -timeout 40m ./... $(LIB_PACKAGES)
	cd deploy && $(GO) test -count=1 -timeout 10m ./...

## lint: go vet, staticcheck and workflowcheck (the library's modules and the deploy module too).
lint: $(BIN)/staticcheck $(BIN)/workflowcheck
	$(GO) vet ./...
	$(BIN)/staticcheck ./...
	for m in $(LIB_MODULES) deploy; do (cd $$m && $(GO) vet ./... && $(BIN)/staticcheck ./...) || exit 1; done
	$(BIN)/workflowcheck ./workflows/...
	cd outbox && $(BIN)/workflowcheck ./temporalpub/eventsignal/...

## clean: remove bin/ (the tool binaries; the next make builds them again).
clean:
	rm -rf $(BIN)

## up: the whole stack in Docker (docker-compose.yml): writes the secrets into .env when missing, then docker compose up --build.
.PHONY: up
up:
	sh deploy/write-env.sh .env
	docker compose up --build

## build: every binary into bin/, its --version naming VERSION (default: git describe, e.g. the tag v0.1.0).
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null)
.PHONY: build
build:
	$(GO) build -ldflags "-X github.com/outflow/outflow/internal/cli.version=$(VERSION) -X main.version=$(VERSION)" -o $(BIN)/ ./worker ./starter ./cmd/...

## demo: the main job: prepares what is missing, runs the stack, places the scripted orders, prints the summary.
# DEMO_EXIT=1 exits after the table.
demo: $(JAEGER)
	$(GO) run ./cmd/demo

## soak: the chaos soak alone, for DURATION (default 10m); SOAK_SOURCE=cdc or log for the other relay sources.
DURATION ?= 10m
SOAK_SOURCE ?= poll
SOAK_TEST = $(if $(filter cdc,$(SOAK_SOURCE)),TestChaosSoakCDC,$(if $(filter log,$(SOAK_SOURCE)),TestChaosSoakLog,TestChaosSoak))
soak: $(TEMPORAL)
	OUTFLOW_SOAK_DURATION=$(DURATION) $(GO) test -count=1 -timeout 0 -run '^$(SOAK_TEST)$$' -v ./testsuite/

## bench: outflow's relay figures beside same-run baselines (docs/performance.md); BENCH_FLAGS=--quick for a short run.
# Uses DATABASE_URL and TEMPORAL_ADDRESS, starts nothing.
.PHONY: bench
bench:
	$(GO) run ./cmd/bench $(BENCH_FLAGS)

## bench-peers: outflow's relay (poll, cdc and log) beside River, Watermill and DBOS doing the same job (about an hour).
# docs/performance.md. bench/peers is a module of its own, so River, Watermill and DBOS never enter
# go.mod. Uses DATABASE_URL (scratch databases peers_*, dropped afterwards) and starts a Temporal
# dev server from bin/temporal. About 55 minutes on two cores, 12 of them DBOS's drains and a
# fifth the crash round (-crash=false skips it); PEERS_FLAGS='-events 2000 -orders 200 -rounds 1
# -duration 3s -held-horizon 0 -crash=false' for a short run (go run . -h).
.PHONY: bench-peers
bench-peers: $(TEMPORAL)
	cd bench/peers && $(GO) run . $(PEERS_FLAGS)

## test-peers: the peers bench's lint and tests (bench/peers, a module that make lint and make test do not reach).
# Every contender drains a small backlog exactly once, the out-of-order count on a known
# sequence, the overlapping-transactions round on every contender, the effect round (a Temporal
# dev server) for outflow and DBOS and its bare-start baseline, the crash round (a restart, a kill) for outflow's sources.
# About a minute once River, Watermill and DBOS are built.
.PHONY: test-peers
test-peers: $(BIN)/staticcheck
	cd bench/peers && $(GO) vet ./... && $(BIN)/staticcheck ./...
	cd bench/peers && $(GO) test -count=1 -timeout 5m ./...

## cluster: a two-node Temporal cluster on PostgreSQL in the foreground until Ctrl-C; prints TEMPORAL_ADDRESS=HOST:PORT.
# Databases outflow_temporal and outflow_temporal_visibility on DATABASE_URL's server,
# else 127.0.0.1:5432. Prints TEMPORAL_ADDRESS=HOST:PORT when ready:
#   TEMPORAL_ADDRESS=127.0.0.1:7233 make demo
# CLUSTER_FLAGS=-fresh starts on empty databases (see go run ./cmd/cluster -h).
.PHONY: cluster
cluster: $(TEMPORAL) $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL) $(TEMPORAL_UI_SERVER)
	$(GO) run ./cmd/cluster $(CLUSTER_FLAGS)

## test-cluster: the cluster proof: every crash suite on two-node Temporal clusters on PostgreSQL (about 17 minutes).
# OUTFLOW_TEST_TEMPORAL=cluster: a node SIGKILLed under a stream of starts
# (internal/dev/cluster), then every crash suite of testsuite/ on one cluster: the
# failpoint matrix, the chaos soak (plus a Temporal node SIGKILLed and restarted
# and the Temporal databases' backends terminated), the 20,000-event backlog,
# the end-to-end saga and the time edges. About 17 minutes on two cores (the backlog and soak run in both relay sources); the
# cluster's config and node logs stay in .data/test-cluster/.
CLUSTER_TESTS ?= .
.PHONY: test-cluster
test-cluster: $(TEMPORAL) $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL)
	rm -rf .data/test-cluster
	OUTFLOW_TEST_TEMPORAL=cluster OUTFLOW_CLUSTER_LOGS=$(CURDIR)/.data/test-cluster \
		$(GO) test -count=1 -p 1 -timeout 60m -v -run '$(CLUSTER_TESTS)' ./internal/dev/cluster/ ./testsuite/
