package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuSample is the CPU time the machine has spent so far, in total and by
// whom: this process (the bench: the bare side's client, or the relay, its
// publisher and client), PostgreSQL's processes and the Temporal server's
// (a process named temporal or temporal-server). The difference of two
// samples says where a timed phase's CPU went, which a throughput ratio on
// a machine of few cores cannot: a relay that costs the Temporal server
// CPU shows it here. Linux only (/proc); elsewhere every field stays zero.
type cpuSample struct {
	busy, self, postgres, temporal time.Duration
	// procs is the CPU time of each PostgreSQL and Temporal process by pid,
	// so that a difference counts only what each spent in between (a
	// backend that exited meanwhile takes its time with it, one that began
	// counts whole).
	procs map[int]procTime
}

type procTime struct {
	temporal bool
	used     time.Duration
}

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// platform Go supports.
const clockTick = time.Second / 100

func sampleCPU() cpuSample {
	s := cpuSample{procs: map[int]procTime{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line)) // cpu user nice system idle iowait irq softirq steal ...
		for i := 1; i < len(f) && i <= 8; i++ {
			if i == 4 || i == 5 { // idle, iowait
				continue
			}
			v, _ := strconv.ParseInt(f[i], 10, 64)
			s.busy += time.Duration(v) * clockTick
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		comm, used, ok := procCPU(p)
		switch {
		case !ok:
		case comm == "postgres":
			s.procs[pid] = procTime{used: used}
			s.postgres += used
		case comm == "temporal" || comm == "temporal-server":
			s.procs[pid] = procTime{temporal: true, used: used}
			s.temporal += used
		}
	}
	return s
}

// procCPU reads a /proc/PID/stat file: the command name and the user and
// system time the process has used.
func procCPU(path string) (string, time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, false
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(string(b[end+1:])) // state ppid ... utime is the 12th after the name
	if len(f) < 13 {
		return "", 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return string(b[open+1 : end]), time.Duration(ut+st) * clockTick, true
}

// sub is what was spent from o to s: per process, so PostgreSQL backends
// that come and go never make a share negative.
func (s cpuSample) sub(o cpuSample) cpuSample {
	d := cpuSample{busy: s.busy - o.busy, self: s.self - o.self}
	for pid, p := range s.procs {
		used := p.used
		if before, ok := o.procs[pid]; ok && before.temporal == p.temporal && before.used <= used {
			used -= before.used
		}
		if p.temporal {
			d.temporal += used
		} else {
			d.postgres += used
		}
	}
	return d
}

// add sums two differences (their per-process detail is dropped).
func (s cpuSample) add(o cpuSample) cpuSample {
	return cpuSample{busy: s.busy + o.busy, self: s.self + o.self, postgres: s.postgres + o.postgres, temporal: s.temporal + o.temporal}
}

// perEvent formats s spread over n events, in milliseconds of CPU each.
func (s cpuSample) perEvent(n int) string {
	if n == 0 {
		return "n/a"
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	rest := s.busy - s.self - s.postgres - s.temporal
	return fmt.Sprintf("%.2f ms (bench process %.2f, PostgreSQL %.2f, Temporal server %.2f, rest of the machine %.2f)",
		ms(s.busy), ms(s.self), ms(s.postgres), ms(s.temporal), ms(rest))
}

// msPerEvent is the machine's busy CPU per event, in milliseconds.
func (s cpuSample) msPerEvent(n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(s.busy) / float64(time.Millisecond) / float64(n)
}

// placement says on which CPUs the bench and the Temporal server's
// processes may run (their affinity, Cpus_allowed_list in /proc/PID/status)
// and whether they share any. On a machine of few cores a server that
// shares the bench's CPUs is paid for every millisecond the relay spends
// (its process and its PostgreSQL backend) with the server's own starts, so
// handoff_ratio then measures who wins a shared core besides whether the
// relay keeps the server busy; in production the relay and the server run
// on different machines. docs/performance.md, "Reproduce", pins them apart
// with taskset.
func placement() string {
	self, selfSet, ok := cpusAllowed("self")
	if !ok {
		return "CPU placement unknown (no /proc)"
	}
	var servers []string
	shared := false
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		dir := filepath.Dir(p)
		comm, _, ok := procCPU(p)
		if !ok || (comm != "temporal" && comm != "temporal-server") {
			continue
		}
		list, set, ok := cpusAllowed(filepath.Base(dir))
		if !ok {
			continue
		}
		servers = append(servers, fmt.Sprintf("%s (pid %s) on CPUs %s", comm, filepath.Base(dir), list))
		for c := range set {
			if selfSet[c] {
				shared = true
			}
		}
	}
	if len(servers) == 0 {
		return fmt.Sprintf("bench on CPUs %s; no Temporal server process on this machine", self)
	}
	verdict := "apart: the relay's CPU is not the server's"
	if shared {
		verdict = "shared: the relay's CPU and the server's compete (taskset pins them apart)"
	}
	return fmt.Sprintf("bench on CPUs %s, %s; %s", self, strings.Join(servers, ", "), verdict)
}

// cpusAllowed reads the affinity of process pid ("self" for this one): the
// kernel's list (such as 0-1 or 0,2-3) and the CPUs in it.
func cpusAllowed(pid string) (string, map[int]bool, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return "", nil, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			v = strings.TrimSpace(v)
			set, err := parseCPUList(v)
			return v, set, err == nil
		}
	}
	return "", nil, false
}

// parseCPUList parses a kernel CPU list: comma-separated CPUs and ranges.
func parseCPUList(s string) (map[int]bool, error) {
	set := map[int]bool{}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("CPU list %q: %w", s, err)
			}
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	return set, nil
}
