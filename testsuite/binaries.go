package testsuite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Binaries are the paths of outflow's programs built for a test run.
type Binaries struct {
	OrderAPI, Starter, Worker, ProviderSim string
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
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/orderapi", "./starter", "./worker", "./cmd/providersim")
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
		Temporal:    temporal,
	}, nil
}

// TemporalCLI finds the Temporal CLI: OUTFLOW_TEMPORAL_CLI, else bin/temporal
// in the checkout. It never downloads one.
func TemporalCLI() (string, error) {
	if p := os.Getenv("OUTFLOW_TEMPORAL_CLI"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "temporal")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no Temporal CLI at %s: run `make bin/temporal` (it builds from the tools module)", p)
	}
	return p, nil
}

// RepoRoot finds the checkout from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/outflow/outflow\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the outflow checkout")
		}
		dir = parent
	}
}
