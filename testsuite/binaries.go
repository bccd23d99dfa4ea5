package testsuite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// Binaries are the paths of outflow's programs built for a test run.
type Binaries struct {
	OrderAPI, Starter, Worker, ProviderSim, Outboxctl string
	// Inventory is the second service (cmd/inventory).
	Inventory string
	// OrderFeed is the JetStream sink's example consumer (cmd/orderfeed).
	OrderFeed string
	// Temporal is the Temporal CLI built from the tools module.
	Temporal string
}

var (
	buildOnce sync.Once
	buildDir  string
	built     Binaries
	buildErr  error
)

// Build compiles the binaries once per test process into a temporary
// directory that [RemoveBuilt] deletes.
func Build() (Binaries, error) {
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "outflow-bin-")
		if buildErr == nil {
			built, buildErr = build(buildDir)
		}
	})
	return built, buildErr
}

// RemoveBuilt deletes what [Build] compiled.
func RemoveBuilt() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

func build(dir string) (Binaries, error) {
	root, err := RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/orderapi", "./starter", "./worker", "./cmd/providersim", "./cmd/outboxctl", "./cmd/inventory", "./cmd/orderfeed")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("go build: %v\n%s", err, out)
	}
	temporal, err := TemporalCLI()
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{
		OrderAPI:    filepath.Join(dir, "orderapi"),
		Starter:     filepath.Join(dir, "starter"),
		Worker:      filepath.Join(dir, "worker"),
		ProviderSim: filepath.Join(dir, "providersim"),
		Outboxctl:   filepath.Join(dir, "outboxctl"),
		Inventory:   filepath.Join(dir, "inventory"),
		OrderFeed:   filepath.Join(dir, "orderfeed"),
		Temporal:    temporal,
	}, nil
}

// TemporalCLI finds the Temporal CLI the way every test does
// (OUTFLOW_TEMPORAL_CLI, else bin/temporal in the checkout). It never
// downloads one.
func TemporalCLI() (string, error) { return devserver.CLIPath() }

// RepoRoot finds the checkout from the working directory.
func RepoRoot() (string, error) { return checkout.Root() }
