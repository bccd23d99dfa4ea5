package embedtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// installVersion is the release the test publishes the library as.
const installVersion = "v0.1.0"

// TestInstallFromOutside: the install lines a team copies,
// `go install github.com/outflow/outflow/outbox/cmd/outboxctl@v0.1.0` and
// `.../outbox/cmd/starter@v0.1.0`, run in a directory outside any module,
// build the library's operator binary and relay from the library's module
// alone (its go.mod has no replace directive, or the go command would
// refuse it), and each binary answers --version with that version and -h
// with its commands or variables, linking neither outflow's root module
// nor Stripe nor NATS. The library is published from this checkout into a
// file-based module proxy (golang.org/x/mod/zip, as a proxy serves it);
// its requirements come from the module cache's downloads, then the public
// proxy.
func TestInstallFromOutside(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds outboxctl and starter from a module proxy: not in -short")
	}
	// The first run compiles the library's requirements once more (-trimpath
	// below); later runs find them in the build cache.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := checkout.Root()
	require.NoError(t, err)

	proxy := t.TempDir()
	publish(t, proxy, filepath.Join(root, "outbox"), module.Version{Path: libraryModule, Version: installVersion})

	modCache := strings.TrimSpace(goOutput(t, ctx, "", nil, "env", "GOMODCACHE"))
	scratch, bin, cache := t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{
		// A module cache of its own, so the published zip is what is built
		// (never an extracted v0.1.0 of an earlier run); the shared cache's
		// downloads serve the requirements without the network.
		"GOPROXY=" + fileURL(proxy) + "," + fileURL(filepath.Join(modCache, "cache", "download")) + ",https://proxy.golang.org",
		"GOMODCACHE=" + cache,
		// -modcacherw: t.TempDir can remove it; -trimpath: the build cache's
		// entries do not depend on the module cache's directory, so a
		// second run compiles nothing it compiled before.
		"GOFLAGS=-modcacherw -trimpath",
		"GONOSUMDB=github.com/outflow", "GOPRIVATE=", "GONOPROXY=",
		"GOBIN=" + bin,
	}
	goOutput(t, ctx, scratch, env, "install",
		libraryModule+"/cmd/outboxctl@"+installVersion, libraryModule+"/cmd/starter@"+installVersion)

	for _, c := range []struct {
		name     string
		help     []string // what -h names
		orderApp string   // what -h must not name: the root's binary's
	}{
		{"outboxctl", []string{"migrate", "status", "retry", "skip", "replay", "source", "cleanup", "DATABASE_URL"}, "forget-customer"},
		{"starter", []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "OUTFLOW_ROUTES", "OUTFLOW_RETENTION", "METRICS_ADDR"}, "OUTFLOW_NATS_URL"},
	} {
		exe := filepath.Join(bin, c.name)
		version := runBinary(t, ctx, exe, "--version")
		require.Contains(t, version, c.name+" "+libraryModule+" "+installVersion+"\n")

		help := runBinary(t, ctx, exe, "-h")
		for _, want := range c.help {
			require.Contains(t, help, want, c.name)
		}
		require.NotContains(t, help, c.orderApp, "%s: the order app's part is the root's binary's", c.name)

		// The binary's build information lists every module it links.
		var linked []string
		for _, line := range strings.Split(goOutput(t, ctx, scratch, env, "version", "-m", exe), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && (f[0] == "dep" || f[0] == "mod") {
				linked = append(linked, f[1])
			}
		}
		require.Contains(t, linked, libraryModule, c.name)
		require.Empty(t, checkModules(linked), c.name)
	}
}

// publish writes version of the module in dir into proxy's layout
// (GOPROXY=file://proxy): the list, .info, .mod and .zip, the zip made as
// the go command and proxies make it (nested modules such as natspub left
// out).
func publish(t *testing.T, proxy, dir string, v module.Version) {
	t.Helper()
	at := filepath.Join(proxy, filepath.FromSlash(v.Path), "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	write := func(name string, data []byte) {
		require.NoError(t, os.WriteFile(filepath.Join(at, name), data, 0o644))
	}
	write("list", []byte(v.Version+"\n"))
	info, err := json.Marshal(map[string]any{"Version": v.Version, "Time": time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	write(v.Version+".info", info)
	goMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.NotContains(t, string(goMod), "replace", "a module with replace directives cannot be installed with go install ...@version")
	write(v.Version+".mod", goMod)
	f, err := os.Create(filepath.Join(at, v.Version+".zip"))
	require.NoError(t, err)
	require.NoError(t, zip.CreateFromDir(f, v, dir))
	require.NoError(t, f.Close())
}

// fileURL is dir as a GOPROXY entry.
func fileURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

// goOutput runs `go args...` in dir with this process's environment
// outside any workspace plus extra, and returns its standard output; it
// fails t with the output when the command fails.
func goOutput(t *testing.T, ctx context.Context, dir string, extra []string, args ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOWORK=off"}, extra...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("go %s (%s)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	require.NoError(t, err, "go %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// runBinary runs exe with args, an environment without DATABASE_URL, and
// returns its standard output; it must exit 0.
func runBinary(t *testing.T, ctx context.Context, exe string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", filepath.Base(exe), strings.Join(args, " "), stderr.String())
	return string(out)
}
