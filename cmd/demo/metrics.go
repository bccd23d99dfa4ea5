package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// metricsPorts are where the demo's starter, worker and inventory serve /metrics
// (METRICS_ADDR) when those ports are free; another free port otherwise.
var metricsPorts = map[string]int{"starter": 9102, "worker": 9103, "inventory": 9104}

// metricsAddr is a loopback address for name's /metrics: its preferred
// port when free, else one the kernel picks.
func metricsAddr(name string) (string, error) {
	if p := metricsPorts[name]; p != 0 && ports.IsFree(p) {
		return fmt.Sprintf("127.0.0.1:%d", p), nil
	}
	p, err := ports.Free()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// relayJobs are the demo's processes that run an outbox relay.
var relayJobs = map[string]bool{"starter": true, "inventory": true}

// writePrometheusConfig writes a Prometheus configuration that scrapes the
// demo's processes (targets maps a job to its host:port) and evaluates the
// repository's alert rules, so `prometheus --config.file=PATH` watches the
// demo with the dashboards' queries. The jobs that run an outbox relay (the
// starter, the inventory) carry outbox_relay="true", the label the outbox's
// alerts find relays by. It returns the file's path.
func writePrometheusConfig(dataDir, root string, targets map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("# Written by make demo: scrapes this demo's processes. Run:\n")
	b.WriteString("#   prometheus --config.file=" + filepath.Join(dataDir, "prometheus.yml") + " --storage.tsdb.path=" + filepath.Join(dataDir, "prometheus") + "\n")
	b.WriteString("global:\n  scrape_interval: 5s\n  evaluation_interval: 5s\n")
	b.WriteString("rule_files:\n")
	for _, rules := range []string{"outbox-alerts.yml", "orders-alerts.yml"} {
		b.WriteString("  - " + filepath.Join(root, "deploy", "prometheus", rules) + "\n")
	}
	b.WriteString("scrape_configs:\n")
	for _, job := range []string{"starter", "worker", "orderapi", "inventory"} {
		if t, ok := targets[job]; ok {
			fmt.Fprintf(&b, "  - job_name: outflow-%s\n    static_configs:\n      - targets: [%q]\n", job, t)
			if relayJobs[job] {
				b.WriteString("        labels:\n          outbox_relay: \"true\"\n")
			}
		}
	}
	path := filepath.Join(dataDir, "prometheus.yml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
