// Package model is the Promela model of the outbox relay's protocol
// (loop.pml: the loop every source shares; relay.pml with poll.pml: the
// poll relay; cdc.pml and log.pml for the other relay sources; signal.pml
// for a signal route) and its mutants (mutants/*.pml); this test checks
// them with SPIN. See README.md for what is modelled, the properties and the figures.
package model

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// check is one SPIN run: a model file in a configuration, and what it must
// report.
type check struct {
	name  string
	file  string   // relative to this directory
	defs  []string // spin -D flags: the model's configuration
	live  bool     // the liveness run: acceptance cycles under weak fairness (pan -a -f)
	hash  int      // pan -w: log2 of the hash table's slots
	nfair int      // gcc -DNFAIR for a liveness run: more than the processes (3 unless set)
	// mutant: the run must find a violation, of one of expect (a property
	// named in capitals in the model's comments, or "settle" for the LTL
	// formula).
	mutant bool
	expect []string
	// heavy checks are skipped with -short.
	heavy bool
}

// The real models' checks (relay.pml; cdc.pml: the CDC stream beside its
// sweeper; log.pml; signal.pml: a signal route), the heaviest first. The
// sizes, and why these, are in README.md.
var modelChecks = []check{
	{name: "cdc/safety/2sweepers-1order-2events-2ops", file: "cdc.pml", hash: 25, heavy: true,
		defs: []string{"-DRELAYS=2", "-DMAX_OPS=2"}},
	{name: "safety/3relays-2orders-2events-0ops", file: "relay.pml", hash: 25, heavy: true,
		defs: []string{"-DRELAYS=3", "-DORDERS=2", "-DEPO=2", "-DMAX_OPS=0"}},
	{name: "safety/2relays-2orders-2events-1op", file: "relay.pml", hash: 25, heavy: true},
	{name: "cdc/safety/1sweeper-1order-3events-1op", file: "cdc.pml", hash: 25, heavy: true,
		defs: []string{"-DEPO=3"}},
	{name: "cdc/safety/2sweepers-1order-2events-1op", file: "cdc.pml", hash: 25, heavy: true,
		defs: []string{"-DRELAYS=2"}},
	// The log source (log.pml): EVENTS counts the enqueue transactions of
	// all orders together (order 1 gets the last one).
	{name: "log/safety/2readers-1order-2events-1op", file: "log.pml", hash: 23, heavy: true,
		defs: []string{"-DREADERS=2", "-DORDERS=1", "-DEVENTS=2", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	{name: "log/safety/1reader-2orders-3events-0ops-unrelated", file: "log.pml", hash: 23, heavy: true,
		defs: []string{"-DREADERS=1", "-DORDERS=2", "-DEVENTS=3", "-DMAX_OPS=0", "-DUNRELATED=1"}},
	{name: "liveness/2relays-1order-2events-2faults-2ops", file: "relay.pml", hash: 24, live: true,
		defs: []string{"-DLIVENESS", "-DORDERS=1", "-DEPO=2", "-DMAX_FAULTS=2", "-DMAX_OPS=2"}},
	// A signal route (signal.pml: relay.pml's relay, receiver.pml's target
	// workflow and its eventsignal Receiver); one order, one continue-as-new.
	{name: "signal/liveness/2relays-1order-2events-1fault-1op", file: "signal.pml", hash: 23, live: true, heavy: true,
		defs: []string{"-DLIVENESS", "-DMAX_FAULTS=1", "-DMAX_OPS=1"}},
	{name: "safety/3relays-1order-2events-2ops", file: "relay.pml", hash: 24,
		defs: []string{"-DRELAYS=3", "-DORDERS=1", "-DEPO=2", "-DMAX_OPS=2"}},
	{name: "signal/safety/2relays-1order-3events-1op-closedworkflow", file: "signal.pml", hash: 24, heavy: true,
		defs: []string{"-DCLOSED_WORKFLOW", "-DEPO=3", "-DMAX_OPS=1"}},
	{name: "liveness/2relays-2orders-2events-1fault", file: "relay.pml", hash: 24, live: true, heavy: true,
		defs: []string{"-DLIVENESS", "-DORDERS=2", "-DEPO=2", "-DMAX_FAULTS=1", "-DMAX_OPS=0"}},
	{name: "safety/2relays-2orders-3events-0ops", file: "relay.pml", hash: 24, heavy: true,
		defs: []string{"-DORDERS=2", "-DEPO=3", "-DMAX_OPS=0"}},
	{name: "safety/2relays-1order-3events-2ops", file: "relay.pml", hash: 24,
		defs: []string{"-DORDERS=1", "-DEPO=3", "-DMAX_OPS=2"}},
	{name: "cdc/liveness/1sweeper-1order-2events-2faults-1op", file: "cdc.pml", hash: 24, live: true,
		defs: []string{"-DLIVENESS", "-DMAX_FAULTS=2", "-DMAX_OPS=1"}},
	{name: "cdc/safety/1sweeper-1order-2events-2ops", file: "cdc.pml", hash: 24,
		defs: []string{"-DMAX_OPS=2"}},
	{name: "cdc/safety/1sweeper-1order-2events-1op", file: "cdc.pml", hash: 24},
	{name: "signal/safety/2relays-1order-2events-2ops", file: "signal.pml", hash: 23,
		defs: []string{"-DMAX_OPS=2"}},
	{name: "signal/liveness/2relays-1order-2events-1fault-0ops-closedworkflow", file: "signal.pml", hash: 22, live: true,
		defs: []string{"-DLIVENESS", "-DCLOSED_WORKFLOW", "-DMAX_FAULTS=1", "-DMAX_OPS=0"}},
	{name: "signal/safety/2relays-1order-2events-1op-closedworkflow", file: "signal.pml", hash: 22,
		defs: []string{"-DCLOSED_WORKFLOW"}},
	{name: "signal/safety/2relays-1order-2events-1op", file: "signal.pml", hash: 22},
	// The pipelined relay (pipeline.pml) beside a classic one.
	{name: "pipeline/safety/1order-2events-1op", file: "relay.pml", hash: 24,
		defs: []string{"-DPIPELINE", "-DORDERS=1", "-DEPO=2", "-DMAX_OPS=1"}},
	{name: "pipeline/safety/1order-3events-0ops", file: "relay.pml", hash: 24,
		defs: []string{"-DPIPELINE", "-DORDERS=1", "-DEPO=3", "-DMAX_OPS=0"}},
	{name: "pipeline/liveness/1order-2events-1fault", file: "relay.pml", hash: 24, live: true, nfair: 4,
		defs: []string{"-DPIPELINE", "-DLIVENESS", "-DORDERS=1", "-DEPO=2", "-DMAX_FAULTS=1", "-DMAX_OPS=0"}},
	{name: "log/liveness/1reader-1order-2events-poison-1fault-1op-unrelated", file: "log.pml", hash: 22, live: true,
		defs: []string{"-DLIVENESS", "-DPOISON=0", "-DREADERS=1", "-DORDERS=1", "-DEVENTS=2", "-DMAX_FAULTS=1", "-DMAX_OPS=1", "-DUNRELATED=1"}},
	{name: "log/safety/2readers-2orders-2events-0ops", file: "log.pml", hash: 22,
		defs: []string{"-DREADERS=2", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=0", "-DUNRELATED=0"}},
	{name: "log/safety/1reader-1order-2events-2ops-unrelated", file: "log.pml", hash: 22,
		defs: []string{"-DREADERS=1", "-DORDERS=1", "-DEVENTS=2", "-DMAX_OPS=2", "-DUNRELATED=1"}},
	{name: "log/safety/1reader-2orders-2events-2ops", file: "log.pml", hash: 22,
		defs: []string{"-DREADERS=1", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=2", "-DUNRELATED=0"}},
	{name: "log/safety/1reader-2orders-3events-0ops", file: "log.pml", hash: 22,
		defs: []string{"-DREADERS=1", "-DORDERS=2", "-DEVENTS=3", "-DMAX_OPS=0", "-DUNRELATED=0"}},
	// Retention (RetainLog) beside the log: one range, the first event's
	// position, sealed, retired and dropped while the rest runs.
	{name: "log/safety/retention-1reader-2orders-2events-1op-unrelated", file: "log.pml", hash: 22,
		defs: []string{"-DRETENTION", "-DREADERS=1", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=1", "-DUNRELATED=1"}},
	// A range after the one a replay starts in (the second event's
	// position) retiring while the operator replays the order.
	{name: "log/safety/retention-tail-1reader-1order-2events-1op-unrelated", file: "log.pml", hash: 22,
		defs: []string{"-DRETENTION", "-DRANGE_LO=2", "-DRANGE_END=3", "-DREADERS=1", "-DORDERS=1", "-DEVENTS=2", "-DMAX_OPS=1", "-DUNRELATED=1"}},
	// The sink refuses an event for good (REFUSED): quarantined, its
	// order's later event held behind it, by the classic relay and by the
	// pipelined one.
	{name: "liveness/2relays-1order-2events-refused-1fault-1op", file: "relay.pml", hash: 23, live: true,
		defs: []string{"-DLIVENESS", "-DREFUSED=0", "-DORDERS=1", "-DEPO=2", "-DMAX_FAULTS=1", "-DMAX_OPS=1"}},
	{name: "pipeline/liveness/1order-2events-refused-1fault", file: "relay.pml", hash: 23, live: true, nfair: 4,
		defs: []string{"-DPIPELINE", "-DLIVENESS", "-DREFUSED=0", "-DORDERS=1", "-DEPO=2", "-DMAX_FAULTS=1", "-DMAX_OPS=0"}},
	{name: "log/liveness/1reader-2orders-2events-poison-1fault-1op", file: "log.pml", hash: 22, live: true,
		defs: []string{"-DLIVENESS", "-DPOISON=1", "-DREADERS=1", "-DORDERS=2", "-DEVENTS=2", "-DMAX_FAULTS=1", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	// The sink refuses an event for good (REFUSED: larger than it takes, or
	// a publish that always runs out of time while the sink answers the
	// others): its order goes to a quarantined hold, the partition's other
	// order flows on.
	{name: "log/liveness/1reader-2orders-2events-refused-1fault-1op", file: "log.pml", hash: 22, live: true,
		defs: []string{"-DLIVENESS", "-DREFUSED=0", "-DREADERS=1", "-DORDERS=2", "-DEVENTS=2", "-DMAX_FAULTS=1", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	{name: "log/safety/2readers-2orders-2events-refused-1op", file: "log.pml", hash: 22, heavy: true,
		defs: []string{"-DREFUSED=0", "-DREADERS=2", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	// A live reader gives the partition back and takes it again later
	// (RELEASES: a relay over its share, log_share.go), beside another
	// reader, and beside the operator's holds.
	{name: "log/safety/2readers-2orders-2events-0ops-1release", file: "log.pml", hash: 22,
		defs: []string{"-DREADERS=2", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=0", "-DUNRELATED=0", "-DRELEASES=1"}},
	{name: "log/safety/1reader-1order-2events-2ops-unrelated-2releases", file: "log.pml", hash: 22,
		defs: []string{"-DREADERS=1", "-DORDERS=1", "-DEVENTS=2", "-DMAX_OPS=2", "-DUNRELATED=1", "-DRELEASES=2"}},
	// A database switching from outbox_events to the log (SWITCH): order 0
	// has two events in outbox_events, the first quarantined (QUAR0=0:
	// not), its log events after them, and a producer on poll may write a
	// third to outbox_events at any time; the poll relay runs beside the
	// log's reader, which starts after the drain.
	{name: "switch/safety/2readers-2orders-2events-1op", file: "log.pml", hash: 25, heavy: true,
		defs: []string{"-DSWITCH", "-DREADERS=2", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	{name: "switch/safety/1reader-1order-3events-1op-noquarantine", file: "log.pml", hash: 25, heavy: true,
		defs: []string{"-DSWITCH", "-DQUAR0=0", "-DREADERS=1", "-DORDERS=1", "-DEVENTS=3", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	{name: "switch/safety/1reader-2orders-2events-1op", file: "log.pml", hash: 22,
		defs: []string{"-DSWITCH", "-DREADERS=1", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	{name: "switch/safety/1reader-1order-2events-1op-noquarantine", file: "log.pml", hash: 22,
		defs: []string{"-DSWITCH", "-DQUAR0=0", "-DREADERS=1", "-DORDERS=1", "-DEVENTS=2", "-DMAX_OPS=1", "-DUNRELATED=0"}},
	{name: "switch/safety/1reader-2orders-2events-0ops-noquarantine-unrelated", file: "log.pml", hash: 22,
		defs: []string{"-DSWITCH", "-DQUAR0=0", "-DREADERS=1", "-DORDERS=2", "-DEVENTS=2", "-DMAX_OPS=0", "-DUNRELATED=1"}},
	{name: "switch/liveness/1reader-2orders-2events-1fault-1op", file: "log.pml", hash: 22, live: true,
		defs: []string{"-DSWITCH", "-DLIVENESS", "-DREADERS=1", "-DORDERS=2", "-DEVENTS=2", "-DMAX_FAULTS=1", "-DMAX_OPS=1", "-DUNRELATED=0"}},
}

// The properties, as the models name them in the comment above each assert.
var properties = []string{
	"ONE LIVE LEASE PER ORDER",
	"ONE EVENT IN FLIGHT PER ORDER",
	"FENCED MARK",
	"NOTHING LOST",
	"FIRST STARTS IN ORDER",
	"SKIP IS FINAL",
	"REPLAY HORIZON",
	"ONE LEASE HOLDER PER ORDER",
	"LANE ADMISSION",
	"NO ORPHANED CLAIM",
	// log.pml
	"FIRST PUBLISHES IN ORDER",
	"NO ADVANCE PAST AN UNPUBLISHED EVENT",
	"NO EVENT BEHIND THE CURSOR",
	"NOTHING DROPPED UNREAD",
	// signal.pml (receiver.pml)
	"EFFECTS ONCE",
	"APPLIED IN ORDER",
	"NO SIGNAL LEFT BEHIND",
}

func TestModel(t *testing.T) {
	spin, err := exec.LookPath("spin")
	if err != nil {
		t.Fatalf("spin (the SPIN model checker) is not on PATH: install it with `apt-get install spin` (the Debian package; .ci/run installs it): %v", err)
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is not on PATH: SPIN's verifier is C and needs it (`apt-get install gcc`): %v", err)
	}
	mutants, err := mutantChecks()
	if err != nil {
		t.Fatal(err)
	}
	checks := append(slices.Clone(modelChecks), mutants...)

	// At most two runs at once (the machine has two cores), the heaviest
	// first: the workers take the checks in order.
	queue := make(chan check)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []string
	)
	for range min(2, runtime.NumCPU()) {
		wg.Go(func() {
			for c := range queue {
				t.Run(c.name, func(t *testing.T) {
					if c.heavy && testing.Short() {
						t.Skip("-short: the larger configurations run without -short")
					}
					line := runCheck(t, spin, cc, c)
					mu.Lock()
					results = append(results, line)
					mu.Unlock()
				})
			}
		})
	}
	for _, c := range checks {
		queue <- c
	}
	close(queue)
	wg.Wait()
	slices.Sort(results)
	t.Logf("SPIN runs:\n%s", strings.Join(results, "\n"))
}

// mutantChecks reads mutants/*.pml. Each names the rule it removes in its
// first line, "/* check: safety */" or "/* check: liveness */" in a later
// one, and may name the properties its counterexample violates in
// "/* expect: A | B */".
func mutantChecks() ([]check, error) {
	files, err := filepath.Glob(filepath.Join("mutants", "*.pml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no mutants in mutants/*.pml")
	}
	var checks []check
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(src), "\n")
		if !strings.HasPrefix(lines[0], "/* Removes ") {
			return nil, fmt.Errorf("%s: the first line must be a comment saying which rule it removes (\"/* Removes ... */\")", f)
		}
		c := check{name: "mutant/" + strings.TrimSuffix(filepath.Base(f), ".pml"), file: f, mutant: true, hash: 22}
		kind := ""
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, "/* check: "); ok {
				kind = strings.TrimSuffix(v, " */")
			}
			if v, ok := strings.CutPrefix(l, "/* expect: "); ok {
				for _, p := range strings.Split(strings.TrimSuffix(v, " */"), "|") {
					c.expect = append(c.expect, strings.TrimSpace(p))
				}
			}
		}
		switch kind {
		case "safety":
		case "liveness":
			c.live = true
		default:
			return nil, fmt.Errorf("%s: needs a line \"/* check: safety */\" or \"/* check: liveness */\"", f)
		}
		checks = append(checks, c)
	}
	return checks, nil
}

// runCheck generates, compiles and runs the verifier of c in a temporary
// directory, fails t unless the outcome is the expected one, and returns a
// line for the summary.
func runCheck(t *testing.T, spin, cc string, c check) string {
	dir := t.TempDir()
	model, err := filepath.Abs(c.file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	run(ctx, t, dir, spin, append(slices.Clone(c.defs), "-a", model)...)
	// A mutant's search is short: -O1 halves the build (about 3 s instead
	// of 5) for a verifier a tenth slower.
	opt := "-O2"
	if c.mutant {
		opt = "-O1"
	}
	gccArgs := []string{opt, "-w", "-DVECTORSZ=512", "-DMEMLIM=2048", "-DCOLLAPSE"}
	panArgs := []string{"-m1000000", fmt.Sprintf("-w%d", c.hash)}
	if c.live {
		gccArgs = append(gccArgs, fmt.Sprintf("-DNFAIR=%d", cmp.Or(c.nfair, 3)))
		panArgs = append(panArgs, "-a", "-f")
	} else {
		gccArgs = append(gccArgs, "-DSAFETY", "-DNOCLAIM")
		if c.mutant {
			// Breadth-first: the shortest counterexample, the one to read.
			gccArgs = append(gccArgs, "-DBFS")
		}
	}
	run(ctx, t, dir, cc, append(gccArgs, "-o", "pan", "pan.c")...)

	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "pan"), panArgs...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // pan's exit status is not its verdict; its report is
	elapsed := time.Since(start)
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	report := string(out)
	errs, ok := field(report, `errors: (\d+)`)
	if !ok {
		t.Fatalf("pan reported no verdict:\n%s", report)
	}
	stored, _ := field(report, `(\d+) states, stored`)
	transitions, _ := field(report, `(\S+) transitions`)
	mem, _ := field(report, `([\d.]+)\s+total actual memory usage`)
	summary := fmt.Sprintf("%-52s errors %s, %s states stored, %s transitions, %s MB, %.1fs (cpu %.1fs)",
		c.name, errs, stored, transitions, mem, elapsed.Seconds(), cpu.Seconds())
	t.Log(summary)
	for _, bad := range []string{"max search depth too small", "out of memory", "reached -DMEMLIM bound", "aborting"} {
		if strings.Contains(report, bad) && errs == "0" {
			t.Fatalf("the search was not complete (%q):\n%s", bad, report)
		}
	}

	if !c.mutant {
		if errs != "0" {
			violated, story := explain(ctx, t, dir, spin, c, model)
			t.Errorf("the model violates %s:\n%s\n%s", violated, story, report)
		}
		return summary
	}
	if errs == "0" {
		t.Fatalf("the mutant %s verifies: the model cannot tell the rule it removes from the protocol\n%s", c.file, report)
	}
	trail := filepath.Join(dir, filepath.Base(c.file)+".trail")
	if _, err := os.Stat(trail); err != nil {
		t.Fatalf("pan found %s errors but wrote no trail: %v", errs, err)
	}
	violated, story := explain(ctx, t, dir, spin, c, model)
	t.Logf("violates %s; the counterexample:\n%s", violated, story)
	if len(c.expect) > 0 && !slices.Contains(c.expect, violated) {
		t.Errorf("the counterexample violates %s, not one of %s", violated, strings.Join(c.expect, ", "))
	}
	return summary + ": " + violated
}

func run(ctx context.Context, t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func field(s, re string) (string, bool) {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// explain replays the trail and returns the property it violates (from the
// comment above the failing assert in the model's source, or "settle" for an
// acceptance cycle) and the printed steps of the counterexample.
func explain(ctx context.Context, t *testing.T, dir, spin string, c check, model string) (string, string) {
	trail := filepath.Base(c.file) + ".trail"
	args := append(slices.Clone(c.defs), "-t", "-k", trail, model)
	cmd := exec.CommandContext(ctx, spin, args...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	var (
		steps    []string
		violated = "unknown"
	)
	at := regexp.MustCompile(`spin: (\S+\.pml):(\d+), Error: assertion violated`)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		l := sc.Text()
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.Contains(l, "START OF CYCLE"):
			steps = append(steps, "    -- the cycle: from here on it repeats, and some event never settles --")
			violated = "settle"
		case at.MatchString(l):
			m := at.FindStringSubmatch(l)
			line, _ := strconv.Atoi(m[2])
			violated = propertyAt(t, m[1], line)
		case strings.HasPrefix(l, " ") && (strings.HasPrefix(trimmed, "relay ") || strings.HasPrefix(trimmed, "stream:") || strings.HasPrefix(trimmed, "operator:") ||
			strings.HasPrefix(trimmed, "clock:") || strings.HasPrefix(trimmed, "producer:") || strings.HasPrefix(trimmed, "temporal:") ||
			strings.HasPrefix(trimmed, "reader ") || strings.HasPrefix(trimmed, "holds:") || strings.HasPrefix(trimmed, "workflow:")):
			steps = append(steps, "    "+trimmed)
		}
	}
	return violated, strings.Join(steps, "\n")
}

// propertyAt returns the property named in capitals in the comment closest
// above line of file.
func propertyAt(t *testing.T, file string, line int) string {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Errorf("reading %s: %v", file, err)
		return "unknown"
	}
	lines := strings.Split(string(src), "\n")
	for i := min(line, len(lines)) - 1; i >= 0 && i >= line-12; i-- {
		for _, p := range properties {
			if strings.Contains(lines[i], p) {
				return p
			}
		}
	}
	return fmt.Sprintf("the assert at %s:%d", filepath.Base(file), line)
}
