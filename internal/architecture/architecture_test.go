package architecture

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

const module = "github.com/outflow/outflow"

// devBinaries are the main packages that are dev or bench tools, not
// production binaries: they may link internal/dev and internal/bench.
var devBinaries = []string{
	module + "/cmd/bench",
	module + "/cmd/cluster",
	module + "/cmd/demo",
}

// temporalFree are the production binaries that talk to no Temporal: they
// link no go.temporal.io package (the Temporal client and codec setup are
// internal/temporalclient's, which they do not import).
var temporalFree = []string{
	module + "/cmd/healthcheck",
	module + "/cmd/orderapi",
	module + "/cmd/providersim",
}

// codecOnly are the production binaries that talk to no Temporal but
// decrypt outflow's payloads, whose codec (internal/codec) is built on the
// SDK's converter and failure converter: they link go.temporal.io/api and
// go.temporal.io/sdk/converter (and with them the SDK's internals and
// gRPC), but neither the client package nor internal/temporalclient, so
// they cannot dial Temporal by accident.
var codecOnly = []string{
	module + "/cmd/orderfeed",
}

// supportRooms are the directories of code that no production binary links:
// the example's dev and bench helpers, and the library's test helpers (its
// dev helpers, one copy, live under outboxtest; the JetStream ones under
// natspub/dev).
var supportRooms = []string{
	module + "/internal/dev/", module + "/internal/bench/",
	module + "/outbox/outboxtest/", module + "/outbox/natspub/dev/",
}

// graph is what `go list` says of the module's packages.
type graph struct {
	// mains are the import paths of the module's main packages.
	mains []string
	// deps are every package's transitive dependencies.
	deps map[string][]string
	// standard says whether a package is of the standard library.
	standard map[string]bool
}

func load(t *testing.T) graph {
	t.Helper()
	root, err := checkout.Root()
	require.NoError(t, err)
	goList := func(args ...string) []string {
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		require.NoError(t, err, "go list %v", args)
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	g := graph{deps: map[string][]string{}, standard: map[string]bool{}}
	for _, line := range goList("-f", `{{.Name}} {{.ImportPath}} {{join .Deps " "}}`, "./...") {
		f := strings.Fields(line)
		if f[0] == "main" {
			g.mains = append(g.mains, f[1])
		}
		g.deps[f[1]] = f[2:]
	}
	for _, line := range goList("-deps", "-f", `{{.ImportPath}} {{.Standard}}`, "./...") {
		path, std, _ := strings.Cut(line, " ")
		g.standard[path] = std == "true"
	}
	require.Greater(t, len(g.mains), 5, "go list found the module's binaries")
	return g
}

// production are g's main packages that are not dev or bench tools.
func (g graph) production() []string {
	var out []string
	for _, m := range g.mains {
		if !slices.Contains(devBinaries, m) {
			out = append(out, m)
		}
	}
	return out
}

// linkedSupport: what the production binaries link of internal/dev and
// internal/bench, one message a package.
func linkedSupport(g graph) []string {
	var bad []string
	for _, bin := range g.production() {
		for _, d := range g.deps[bin] {
			for _, room := range supportRooms {
				if strings.HasPrefix(d, room) {
					bad = append(bad, fmt.Sprintf("%s links %s", bin, d))
				}
			}
		}
	}
	return bad
}

// nonStandard: what pkg links beyond the standard library and the module's
// own packages (which, being in pkg's transitive deps, can bring nothing
// else without it showing here).
func nonStandard(g graph, pkg string) []string {
	var bad []string
	for _, d := range g.deps[pkg] {
		if !g.standard[d] && !strings.HasPrefix(d, module+"/") {
			bad = append(bad, fmt.Sprintf("%s links %s", pkg, d))
		}
	}
	return bad
}

// linkedTemporal: what the temporalFree binaries link of go.temporal.io.
func linkedTemporal(g graph) []string {
	var bad []string
	for _, bin := range temporalFree {
		for _, d := range g.deps[bin] {
			if strings.HasPrefix(d, "go.temporal.io/") {
				bad = append(bad, fmt.Sprintf("%s links %s", bin, d))
			}
		}
	}
	return bad
}

// linkedClient: what the codecOnly binaries link of a Temporal client.
func linkedClient(g graph) []string {
	var bad []string
	for _, bin := range codecOnly {
		for _, d := range g.deps[bin] {
			if d == "go.temporal.io/sdk/client" || d == module+"/internal/temporalclient" {
				bad = append(bad, fmt.Sprintf("%s links %s", bin, d))
			}
		}
	}
	return bad
}

// starterApplication: what the relay links of the order application: the
// workflows, their activities, the payment provider's client, the SDK's
// worker (it only starts workflows).
func starterApplication(g graph) []string {
	var bad []string
	for _, d := range g.deps[module+"/starter"] {
		if strings.Contains(d, "stripe") || d == "go.temporal.io/sdk/worker" ||
			d == module+"/workflows" || d == module+"/activities" {
			bad = append(bad, "starter links "+d)
		}
	}
	return bad
}

func TestArchitecture(t *testing.T) {
	t.Parallel()
	g := load(t)
	for _, m := range slices.Concat(devBinaries, temporalFree, codecOnly, []string{module + "/starter"}) {
		require.Contains(t, g.mains, m, "the rules name %s, which is no longer a main package: update them", m)
	}

	t.Run("production binaries link no dev or bench code", func(t *testing.T) {
		require.Empty(t, linkedSupport(g), "internal/dev and internal/bench are for tests, dev tools and benchmarks "+
			"(devBinaries); a production binary imports what it needs from elsewhere")
	})
	t.Run("handoff links only the standard library", func(t *testing.T) {
		require.Contains(t, g.deps, module+"/handoff")
		require.Empty(t, nonStandard(g, module+"/handoff"), "handoff is the relay's and the workflows' shared contract: "+
			"keep SDK types (the OrderId key) beside their users, e.g. internal/routes")
	})
	t.Run("binaries that talk to no Temporal link no Temporal SDK", func(t *testing.T) {
		require.Empty(t, linkedTemporal(g), "the Temporal client setup is internal/temporalclient's: "+
			"only binaries that talk to Temporal import it")
	})
	t.Run("binaries that only decrypt payloads link no Temporal client", func(t *testing.T) {
		require.Empty(t, linkedClient(g), "a consumer decrypts with internal/codec (natscodec) alone; "+
			"the Temporal client setup is internal/temporalclient's")
	})
	t.Run("the relay links no application", func(t *testing.T) {
		require.Empty(t, starterApplication(g), "the starter links packages of the application; "+
			"move what it needs into package handoff or internal/routes")
	})
}

// TestRulesCanFail feeds each rule a graph that breaks it.
func TestRulesCanFail(t *testing.T) {
	t.Parallel()
	g := graph{
		mains: []string{module + "/cmd/orderapi", module + "/cmd/bench", module + "/starter"},
		deps: map[string][]string{
			module + "/cmd/orderapi": {module + "/internal/dev/checkout", "go.temporal.io/sdk/client"},
			module + "/cmd/bench":    {module + "/internal/bench/benchdb", "go.temporal.io/sdk/client"},
			module + "/starter":      {module + "/workflows", "github.com/stripe/stripe-go/v76"},
			module + "/handoff":      {"fmt", "go.temporal.io/sdk/temporal", module + "/outbox/temporalpub/wire"},
		},
		standard: map[string]bool{"fmt": true},
	}
	require.Equal(t, []string{module + "/cmd/orderapi links " + module + "/internal/dev/checkout"}, linkedSupport(g))
	require.Equal(t, []string{module + "/handoff links go.temporal.io/sdk/temporal"}, nonStandard(g, module+"/handoff"))
	require.Equal(t, []string{module + "/cmd/orderapi links go.temporal.io/sdk/client"}, linkedTemporal(g))
	require.Equal(t, []string{"starter links " + module + "/workflows", "starter links github.com/stripe/stripe-go/v76"},
		starterApplication(g))
}
