package cluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// startProc starts a node or the UI server under outbox/outboxtest/dev/proc, its
// output appended to logPath. The child dies with the parent, so a killed
// `go test` or `make cluster` leaves no server holding PostgreSQL
// connections and ports; its process group of its own lets a terminal's
// Ctrl-C reach only the parent, which stops the nodes in order.
func startProc(name, bin, logPath string, args ...string) (*proc.Process, error) {
	p, err := proc.Start(proc.Options{
		Name: name, Bin: bin, Args: args, Env: childEnv(), LogPath: logPath,
		KillWithParent: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return p, nil
}

// childEnv drops the variables that configure the Temporal server and UI
// from the environment (TEMPORAL_*), so only the written config counts.
func childEnv() []string {
	return proc.Environ(func(k string) bool { return strings.HasPrefix(k, "TEMPORAL_") })
}

// rss reads a process's resident set size (field VmRSS) or its peak
// (VmHWM) from /proc (Linux); 0 elsewhere.
func rss(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
