# outflow — the two commands a newcomer needs are `make demo` and `make test`.
GO      ?= go
BIN     := $(CURDIR)/bin
TEMPORAL := $(BIN)/temporal

# Tests find the Temporal CLI here (testsuite.StartDevServer gets ExistingPath,
# never a download).
export OUTFLOW_TEMPORAL_CLI := $(TEMPORAL)
export OUTFLOW_PROMTOOL := $(BIN)/promtool

.PHONY: test lint tools demo soak clean

# The Temporal CLI is built from the Go module proxy through the separate
# tools module, so the main go.mod stays lean. The first build takes minutes;
# Go's build cache makes the next ones fast.
$(TEMPORAL): tools/go.mod tools/go.sum
	@echo "building the Temporal CLI from the tools module (first build takes a few minutes)..."
	cd tools && $(GO) build -o $(TEMPORAL) github.com/temporalio/cli/cmd/temporal
	@touch $(TEMPORAL)

$(BIN)/staticcheck: tools/lint/go.mod tools/lint/go.sum
	cd tools/lint && $(GO) build -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck

$(BIN)/workflowcheck: tools/lint/go.mod tools/lint/go.sum
	cd tools/lint && $(GO) build -o $(BIN)/workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck

$(BIN)/promtool: tools/promtool/go.mod tools/promtool/go.sum
	@echo "building promtool from tools/promtool (first build takes a few minutes)..."
	cd tools/promtool && $(GO) build -o $(BIN)/promtool github.com/prometheus/prometheus/cmd/promtool

tools: $(TEMPORAL) $(BIN)/staticcheck $(BIN)/workflowcheck $(BIN)/promtool

## test: every test, unit and integration (real PostgreSQL, real Temporal dev server).
test: $(TEMPORAL) $(BIN)/promtool
	$(GO) test -count=1 -timeout 40m ./...

## lint: go vet, staticcheck and workflowcheck.
lint: $(BIN)/staticcheck $(BIN)/workflowcheck
	$(GO) vet ./...
	$(BIN)/staticcheck ./...
	$(BIN)/workflowcheck ./workflows/...

clean:
	rm -rf $(BIN)

## demo: the main job — prepares what is missing, runs the stack, places the
## scripted orders and prints the summary. DEMO_EXIT=1 exits after the table.
demo:
	$(GO) run ./cmd/demo

## soak: the chaos soak alone, for as long as DURATION (default 10m).
DURATION ?= 10m
soak: $(TEMPORAL)
	OUTFLOW_SOAK_DURATION=$(DURATION) $(GO) test -count=1 -timeout 0 -run '^TestChaosSoak$$' -v ./testsuite/

## bench: outflow's relay figures beside same-run baselines (docs/performance.md). Uses
## DATABASE_URL and TEMPORAL_ADDRESS, starts nothing. BENCH_FLAGS=-quick for a short run.
.PHONY: bench
bench:
	$(GO) run ./cmd/bench $(BENCH_FLAGS)
