// Package deploy holds the checks of outflow's deployment files that need
// no Docker engine: docker-compose.yml loaded with the compose
// specification's own loader, the Grafana dashboard decoded as Grafana's
// model, every PromQL expression of the dashboard and the alerts parsed by
// Prometheus's parser and checked against the metrics the binaries
// register, and (deploy/prometheus) the alert rules' promtool tests. It is a
// module of its own (deploy/go.mod) so that compose-go, Prometheus and the
// Grafana SDK never enter the library's go.mod; `make test` runs it.
package deploy

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/codec"
)

const composeFile = "../docker-compose.yml"

// demoPorts are the host ports `make demo` takes when they are free
// (cmd/demo: the order API 8080, the codec server 8081, the inventory 8090,
// the Temporal dev server 7233 and its UI 8233, the throwaway PostgreSQL
// 55432) and the local PostgreSQL it uses (5432): compose publishes none of
// them, so both run at once.
var demoPorts = []uint32{8080, 8081, 8090, 7233, 8233, 55432, 5432}

// oneShots are the jobs that run to completion; everything else runs until
// stopped.
var oneShots = []string{"temporal-schema", "temporal-setup", "migrate", "inventory-db"}

// loadCompose loads docker-compose.yml as `docker compose` does, with env
// as the whole environment (no variable of the machine's leaks in).
func loadCompose(t *testing.T, envFile string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{composeFile},
		cli.WithWorkingDirectory(".."),
		cli.WithEnvFiles(envFile),
		cli.WithDotEnv,
		cli.WithName("outflow"),
	)
	require.NoError(t, err)
	return opts.LoadProject(context.Background())
}

// writtenEnv runs deploy/write-env.sh (what `make up` runs) into a fresh
// directory and returns the file.
func writtenEnv(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), ".env")
	out, err := exec.Command("sh", "write-env.sh", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return file
}

// TestComposeLoadsWithTheWrittenSecrets: the README's one command. `make up`
// writes .env with deploy/write-env.sh; with it, the compose file passes the
// specification's schema validation and interpolation, and the secrets are
// in the formats the binaries accept.
func TestComposeLoadsWithTheWrittenSecrets(t *testing.T) {
	file := writtenEnv(t)
	st, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the secrets file is readable by its owner only")
	env, err := dotenv.GetEnvFromFile(nil, []string{file})
	require.NoError(t, err)
	_, err = codec.ParseKeys(env["OUTFLOW_CODEC_KEYS"])
	require.NoError(t, err, "OUTFLOW_CODEC_KEYS as the worker, relay and codec server parse it")
	require.Regexp(t, `^[0-9a-f]{48}$`, env["ORDERAPI_TOKEN"])
	require.NotEmpty(t, env["GRAFANA_ADMIN_PASSWORD"])

	// A second `make up` keeps the secrets.
	before, err := os.ReadFile(file)
	require.NoError(t, err)
	out, err := exec.Command("sh", "write-env.sh", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "keeping")
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, before, after)

	p, err := loadCompose(t, file)
	require.NoError(t, err)
	for _, svc := range []string{"worker", "starter", "codecserver"} {
		require.Equal(t, env["OUTFLOW_CODEC_KEYS"], *p.Services[svc].Environment["OUTFLOW_CODEC_KEYS"], svc)
	}
	require.Equal(t, env["ORDERAPI_TOKEN"], *p.Services["orderapi"].Environment["ORDERAPI_TOKEN"])
	require.Equal(t, "poll", *p.Services["starter"].Environment["OUTFLOW_RELAY_SOURCE"], "the documented default")
	require.Equal(t, "poll", *p.Services["orderapi"].Environment["OUTFLOW_RELAY_SOURCE"], "the producer writes where the starter reads")
	require.Equal(t, "poll", *p.Services["inventory"].Environment["OUTFLOW_RELAY_SOURCE"], "the inventory relay's documented default")
}

// TestComposeVariablesAreDocumented: every variable docker-compose.yml
// interpolates is in .env.example, and every required one stops compose,
// naming it, while it is unset (.env.example's own empty values included).
func TestComposeVariablesAreDocumented(t *testing.T) {
	raw, err := os.ReadFile(composeFile)
	require.NoError(t, err)
	used := map[string]bool{}
	required := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([A-Z0-9_]+)(:?[?-])?`).FindAllStringSubmatch(string(raw), -1) {
		used[m[1]] = true
		if strings.HasSuffix(m[2], "?") {
			required[m[1]] = true
		}
	}
	require.NotEmpty(t, required)
	documented, err := dotenv.GetEnvFromFile(nil, []string{"../.env.example"})
	require.NoError(t, err)
	for v := range used {
		_, ok := documented[v]
		require.True(t, ok, "%s is interpolated in docker-compose.yml but not documented in .env.example", v)
	}
	for v := range documented {
		require.True(t, used[v], ".env.example documents %s, which docker-compose.yml does not read", v)
	}

	// As shipped, .env.example leaves the secrets empty: compose refuses.
	_, err = loadCompose(t, "../.env.example")
	require.Error(t, err)
	require.Contains(t, err.Error(), "required variable")

	// With everything but one set, compose names the missing one.
	full, err := dotenv.GetEnvFromFile(nil, []string{writtenEnv(t)})
	require.NoError(t, err)
	for v := range required {
		var lines []string
		for k, val := range full {
			if k != v {
				lines = append(lines, k+"="+val)
			}
		}
		file := filepath.Join(t.TempDir(), ".env")
		require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
		_, err := loadCompose(t, file)
		require.Error(t, err, "compose starts without %s", v)
		require.Contains(t, err.Error(), v)
		require.Contains(t, err.Error(), ".env.example", "the message says where %s is documented", v)
	}
}

// TestComposeShape: Temporal on its current image shape; restart policies,
// healthchecks and start conditions such that nothing is silently left
// unstarted; ports clear of `make demo`'s; every mounted file present.
func TestComposeShape(t *testing.T) {
	p, err := loadCompose(t, writtenEnv(t))
	require.NoError(t, err)

	// Temporal: a schema job on admin-tools, server nodes on
	// temporalio/server, a namespace job retried on failure; no auto-setup
	// (no longer built).
	for name, s := range p.Services {
		require.NotContains(t, s.Image, "auto-setup", name)
	}
	require.True(t, strings.HasPrefix(p.Services["temporal-schema"].Image, "temporalio/admin-tools:"))
	require.True(t, strings.HasPrefix(p.Services["temporal-setup"].Image, "temporalio/admin-tools:"))
	for _, node := range []string{"temporal", "temporal-2"} {
		s := p.Services[node]
		require.True(t, strings.HasPrefix(s.Image, "temporalio/server:"), node)
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, s.DependsOn["temporal-schema"].Condition, node)
		require.Contains(t, s.Networks["default"].Aliases, "temporal", node)
	}
	require.Equal(t, types.ServiceConditionHealthy, p.Services["temporal-setup"].DependsOn["temporal"].Condition)

	for name, s := range p.Services {
		if slices.Contains(oneShots, name) {
			// Retried a bounded number of times, so that a job that keeps
			// failing ends, and `docker compose up` reports it.
			require.Regexp(t, `^on-failure:[0-9]+$`, s.Restart, "one-shot %s", name)
			continue
		}
		require.Equal(t, "unless-stopped", s.Restart, "%s restarts after a crash", name)
		require.NotNil(t, s.HealthCheck, "%s has a healthcheck", name)
		require.NotEmpty(t, s.HealthCheck.Test, name)
		require.False(t, s.HealthCheck.Disable, name)
	}
	// What waits on what: a one-shot is waited for until it completes
	// successfully, a service until it is healthy. Nothing starts on a
	// dependency merely started (which hides a dependency that failed).
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			_, ok := p.Services[dep]
			require.True(t, ok, "%s depends on %s, which does not exist", name, dep)
			want := types.ServiceConditionHealthy
			if slices.Contains(oneShots, dep) {
				want = types.ServiceConditionCompletedSuccessfully
			}
			require.Equal(t, want, d.Condition, "%s waits for %s", name, dep)
		}
	}
	for _, svc := range []string{"worker", "starter"} {
		require.Contains(t, p.Services[svc].DependsOn, "migrate", svc)
		require.Contains(t, p.Services[svc].DependsOn, "temporal-setup", svc)
	}

	// outflow's services (the Dockerfile's distroless image) probe their own
	// /healthz with cmd/healthcheck, on the port they listen on.
	listenEnv := map[string]string{"worker": "METRICS_ADDR", "starter": "METRICS_ADDR", "orderapi": "ORDERAPI_ADDR",
		"codecserver": "CODECSERVER_ADDR", "providersim": "PROVIDERSIM_ADDR", "inventory": "INVENTORY_ADDR"}
	for name, s := range p.Services {
		if s.Build == nil || slices.Contains(oneShots, name) {
			continue
		}
		env, ok := listenEnv[name]
		require.True(t, ok, "%s: a new outflow service needs its healthcheck checked here", name)
		addr := s.Environment[env]
		require.NotNil(t, addr, "%s sets %s", name, env)
		_, port, err := net.SplitHostPort(*addr)
		require.NoError(t, err)
		test := s.HealthCheck.Test
		require.Equal(t, "CMD", test[0], "%s: the distroless image has no shell", name)
		require.Equal(t, "healthcheck", test[1], name)
		require.Regexp(t, `^http://127\.0\.0\.1:`+port+`/`, test[2], "%s probes the port of its %s", name, env)
	}
	_, err = os.Stat("../cmd/healthcheck/main.go")
	require.NoError(t, err)
	dockerfile, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	require.Contains(t, string(dockerfile), "./cmd/healthcheck", "the image carries the healthcheck binary")
	// Every command a service of the image runs is a binary the Dockerfile
	// builds (go build -o /out/ names each after its directory).
	built := map[string]bool{}
	for _, m := range regexp.MustCompile(`\./((?:cmd/)?[a-z]+)\b`).FindAllStringSubmatch(string(dockerfile), -1) {
		built[filepath.Base(m[1])] = true
	}
	for name, s := range p.Services {
		if s.Build != nil {
			require.NotEmpty(t, s.Command, name)
			require.True(t, built[s.Command[0]], "%s runs %s, which the Dockerfile does not build", name, s.Command[0])
		}
	}

	// Traces: every long-running outflow service exports OTLP over HTTP,
	// by the standard variable alone, to the jaeger service's receiver.
	require.True(t, strings.HasPrefix(p.Services["jaeger"].Image, "jaegertracing/jaeger:"))
	for name, s := range p.Services {
		if s.Build != nil && !slices.Contains(oneShots, name) {
			require.NotNil(t, s.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"], "%s exports its spans", name)
			require.Equal(t, "http://jaeger:4318", *s.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"], name)
		}
	}

	// The inventory (docs/inventory.md): the saga's second service, on a
	// database of its own that its one-shot job creates, reached by the
	// worker, which then reserves stock in every order's saga.
	inv := p.Services["inventory"]
	require.NotNil(t, inv.Build, "the inventory runs from outflow's image")
	require.Equal(t, types.ShellCommand{"inventory"}, inv.Command)
	_, port, err := net.SplitHostPort(*inv.Environment["INVENTORY_ADDR"])
	require.NoError(t, err)
	worker := p.Services["worker"]
	require.NotNil(t, worker.Environment["INVENTORY_URL"], "the worker reserves stock only with INVENTORY_URL set")
	require.Equal(t, "http://inventory:"+port, *worker.Environment["INVENTORY_URL"])
	require.Contains(t, worker.DependsOn, "inventory")
	invDB, err := url.Parse(*inv.Environment["INVENTORY_DATABASE_URL"])
	require.NoError(t, err)
	orderDB, err := url.Parse(*worker.Environment["DATABASE_URL"])
	require.NoError(t, err)
	require.Equal(t, orderDB.Host, invDB.Host, "the inventory's database is on the stack's server")
	require.NotEqual(t, orderDB.Path, invDB.Path, "the inventory has a database of its own")
	require.NotContains(t, inv.Environment, "DATABASE_URL", "the inventory reads INVENTORY_DATABASE_URL only")
	job := p.Services["inventory-db"]
	require.Equal(t, strings.TrimPrefix(invDB.Path, "/"), *job.Environment["INVENTORY_DB"], "the job creates the database the inventory uses")
	require.Equal(t, invDB.Hostname(), *job.Environment["PGHOST"])
	require.Equal(t, invDB.User.Username(), *job.Environment["PGUSER"])
	require.Contains(t, inv.DependsOn, "inventory-db")
	require.Contains(t, inv.DependsOn, "temporal-setup")
	require.Equal(t, *p.Services["temporal-setup"].Environment["NAMESPACE"], *inv.Environment["TEMPORAL_NAMESPACE"], "the sagas' namespace")
	require.Equal(t, *worker.Environment["OUTFLOW_TASK_QUEUE"], *inv.Environment["INVENTORY_SAGA_TASK_QUEUE"], "the sagas' task queue")
	require.Equal(t, "InventoryLateEventWorkflow", *inv.Environment["INVENTORY_CLOSED_WORKFLOW"], "a closed saga's event goes to the worker's workflow, not to quarantine")
	require.Equal(t, "healthcheck", inv.HealthCheck.Test[1])
	require.Equal(t, "http://127.0.0.1:"+port+"/healthz", inv.HealthCheck.Test[2], "the inventory serves GET /healthz on INVENTORY_ADDR")

	// Published ports: none of `make demo`'s; all on loopback but the order
	// API's (which requires its token).
	seen := map[uint32]string{}
	for name, s := range p.Services {
		for _, port := range s.Ports {
			hp, err := strconv.ParseUint(port.Published, 10, 32)
			require.NoError(t, err, "%s publishes %q", name, port.Published)
			require.NotContains(t, demoPorts, uint32(hp), "%s publishes %d, which make demo uses", name, hp)
			other, dup := seen[uint32(hp)]
			require.False(t, dup, "%s and %s both publish %d", name, other, hp)
			seen[uint32(hp)] = name
			if name != "orderapi" {
				require.Equal(t, "127.0.0.1", port.HostIP, "%s publishes on loopback only", name)
			}
		}
	}

	// Every bind-mounted file exists in the repository.
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			_, err := os.Stat(v.Source)
			require.NoError(t, err, "%s mounts %s", name, v.Source)
		}
	}
	// The scripts the jobs run are in the directory mounted at /outflow.
	for job, dir := range map[string]string{"temporal-schema": "temporal", "temporal-setup": "temporal", "inventory-db": "postgres"} {
		cmd := p.Services[job].Command
		require.Len(t, cmd, 1, job)
		script := strings.TrimPrefix(cmd[0], "/outflow/")
		mounted := false
		for _, v := range p.Services[job].Volumes {
			mounted = mounted || (v.Target == "/outflow" && filepath.Base(v.Source) == dir)
		}
		require.True(t, mounted, "%s mounts deploy/%s at /outflow", job, dir)
		_, err := os.Stat(filepath.Join(dir, script))
		require.NoError(t, err, "%s runs %s", job, cmd[0])
		out, err := exec.Command("sh", "-n", filepath.Join(dir, script)).CombinedOutput()
		require.NoError(t, err, "%s: %s", script, out)
	}

	// Grafana: the provider's path is where the dashboard is mounted.
	g := p.Services["grafana"]
	var dashMount string
	for _, v := range g.Volumes {
		if strings.HasSuffix(v.Source, filepath.Join("deploy", "grafana", "outflow.json")) {
			dashMount = v.Target
		}
	}
	require.NotEmpty(t, dashMount, "grafana mounts deploy/grafana/outflow.json")
	prov, err := os.ReadFile("grafana/provisioning/dashboards/outflow.yml")
	require.NoError(t, err)
	require.Contains(t, string(prov), "path: "+filepath.Dir(dashMount))
}

// TestPrometheusScrapesEveryService: deploy/prometheus/prometheus.yml loads
// as Prometheus loads it, names the rule file, and scrapes every compose
// service that exports metrics on the port it listens on, and marks the
// jobs that run an outbox relay (the starter's and the inventory's) with
// outbox_relay="true", the label the outbox's alerts find relays by.
func TestPrometheusScrapesEveryService(t *testing.T) {
	cfg, err := promconfig.LoadFile("prometheus/prometheus.yml", false, nil)
	require.NoError(t, err)
	var loaded []string
	for _, f := range cfg.RuleFiles {
		loaded = append(loaded, filepath.Join("prometheus", filepath.Base(f)))
	}
	require.Equal(t, ruleFiles, loaded, "prometheus.yml loads the outbox's and the order service's alert rules")

	p, err := loadCompose(t, writtenEnv(t))
	require.NoError(t, err)
	targets := map[string]string{}         // host:port -> job
	relay := map[string]model.LabelValue{} // host:port -> its outbox_relay label
	for _, sc := range cfg.ScrapeConfigs {
		for tg, labels := range staticTargets(sc) {
			targets[tg] = sc.JobName
			relay[tg] = labels["outbox_relay"]
		}
	}
	want := map[string]struct {
		env, job string
		relay    model.LabelValue
	}{
		"starter":   {"METRICS_ADDR", "outflow-starter", "true"},
		"worker":    {"METRICS_ADDR", "outflow-worker", ""},
		"orderapi":  {"ORDERAPI_ADDR", "outflow-orderapi", ""},
		"inventory": {"METRICS_ADDR", "outflow-inventory", "true"},
	}
	for svc, w := range want {
		addr := p.Services[svc].Environment[w.env]
		require.NotNil(t, addr, svc)
		_, port, err := net.SplitHostPort(*addr)
		require.NoError(t, err)
		require.Equal(t, w.job, targets[svc+":"+port], "Prometheus scrapes %s on %s:%s", svc, svc, port)
		require.Equal(t, w.relay, relay[svc+":"+port], "%s's outbox_relay label (\"true\" on every job that runs a relay)", svc)
	}
	// Every target is a name on the compose network: a service's, or a
	// network alias only one service carries.
	carriers := map[string][]string{}
	for name, s := range p.Services {
		carriers[name] = append(carriers[name], name)
		for _, n := range s.Networks {
			if n == nil {
				continue
			}
			for _, a := range n.Aliases {
				carriers[a] = append(carriers[a], name)
			}
		}
	}
	for tg := range targets {
		host, _, _ := net.SplitHostPort(tg)
		require.Len(t, carriers[host], 1, "target %s names exactly one compose service (carriers %v)", tg, carriers[host])
	}
	// Every service that sets METRICS_ADDR is scraped.
	for name, s := range p.Services {
		if addr, ok := s.Environment["METRICS_ADDR"]; ok {
			_, port, _ := net.SplitHostPort(*addr)
			require.Contains(t, targets, name+":"+port, "%s exports metrics", name)
		}
	}
	prom := p.Services["prometheus"]
	require.True(t, strings.HasPrefix(prom.Image, "prom/prometheus:"))
	require.Contains(t, prom.Command, "--config.file=/etc/prometheus/prometheus.yml")
}

// staticTargets maps each static target of sc (host:port) to its group's
// labels.
func staticTargets(sc *promconfig.ScrapeConfig) map[string]model.LabelSet {
	out := map[string]model.LabelSet{}
	for _, c := range sc.ServiceDiscoveryConfigs {
		if s, ok := c.(discovery.StaticConfig); ok {
			for _, g := range s {
				for _, lbl := range g.Targets {
					out[string(lbl[model.AddressLabel])] = g.Labels
				}
			}
		}
	}
	return out
}

// TestDockerignore: the build context leaves out the history, the Temporal
// binaries, the demo's state and key file, and the compose secrets.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	for _, want := range []string{".git", "bin/", ".data/", ".env"} {
		require.Contains(t, lines, want)
	}
}
