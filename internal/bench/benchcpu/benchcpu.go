// Package benchcpu reads where the machine's CPU went while one of outflow's
// benchmarks (cmd/bench and the peers bench, bench/peers) ran: the machine
// as a whole, the benchmark's own process, PostgreSQL's processes and the
// Temporal server's. A throughput ratio on a machine of few cores cannot
// say this: a relay that costs the Temporal server CPU, or a contender
// whose PostgreSQL backends are busy, shows here. One reader serves both
// benchmarks, so that a millisecond per event or a core busy means the same
// in every table. Linux only (/proc): elsewhere the figures stay zero and a
// Sample says what it could not read.
package benchcpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// platform Go supports (getconf CLK_TCK).
const clockTick = time.Second / 100

// Meter takes Samples. The zero Meter counts every process named temporal
// or temporal-server as the Temporal server, which is what a benchmark
// against a server it did not start can do; a benchmark that started its
// own server names it by SinkPID, so that another server on the machine
// is not counted as its.
type Meter struct {
	// SinkPID is the Temporal server's process; 0 to find it by name.
	SinkPID int
}

// Sample is the CPU time spent so far, at a wall time: by the machine
// (every CPU's time neither idle nor waiting on I/O), by this process, by
// PostgreSQL's processes and by the Temporal server's. Only the difference
// of two samples (Sub) says anything about a window.
type Sample struct {
	At                             time.Time
	Busy, Self, Postgres, Temporal time.Duration
	// procs is the CPU time of each PostgreSQL and Temporal process by pid,
	// so that a difference counts only what each spent in between.
	procs map[int]proc
}

// proc is one counted process's CPU time so far.
type proc struct {
	temporal bool
	used     time.Duration
}

// kind is what a process counts as.
type kind int

const (
	other kind = iota
	postgres
	temporal
)

// kind says whether process pid, whose command name is comm, is one of
// PostgreSQL's, the Temporal server's, or neither.
func (m Meter) kind(pid int, comm string) kind {
	switch {
	case comm == "postgres":
		return postgres
	case m.SinkPID != 0:
		if pid == m.SinkPID {
			return temporal
		}
	case comm == "temporal" || comm == "temporal-server":
		return temporal
	}
	return other
}

// Sample reads the CPU time spent so far. A part it cannot read stays zero
// and is named in the error (the machine's or this process's time, /proc,
// or the named sink's process, gone or never there); the rest is read all
// the same. A process that exits while /proc is read is not counted: its
// time left with it.
func (m Meter) Sample() (Sample, error) {
	s := Sample{At: time.Now(), procs: map[int]proc{}}
	var errs []error
	busy, err := machineBusy()
	if err != nil {
		errs = append(errs, err)
	}
	s.Busy = busy
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		errs = append(errs, fmt.Errorf("cpu of this process: %w", err))
	} else {
		s.Self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if m.SinkPID != 0 {
		// Read first and apart from the others, so that a sink that is
		// gone is an error rather than a silent zero.
		if _, used, err := readStat(strconv.Itoa(m.SinkPID)); err != nil {
			errs = append(errs, err)
		} else {
			s.procs[m.SinkPID] = proc{temporal: true, used: used}
			s.Temporal += used
		}
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		errs = append(errs, fmt.Errorf("cpu of the processes: %w", err))
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || (m.SinkPID != 0 && pid == m.SinkPID) {
			continue
		}
		comm, used, err := readStat(d.Name())
		if err != nil {
			continue // gone meanwhile
		}
		switch m.kind(pid, comm) {
		case postgres:
			s.procs[pid] = proc{used: used}
			s.Postgres += used
		case temporal:
			s.procs[pid] = proc{temporal: true, used: used}
			s.Temporal += used
		}
	}
	return s, errors.Join(errs...)
}

// machineBusy is the first line of /proc/stat, every CPU's time together,
// without idle and iowait (user nice system irq softirq steal).
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu of the machine: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line)) // cpu user nice system idle iowait irq softirq steal ...
	var busy time.Duration
	for i := 1; i < len(f) && i <= 8; i++ {
		if i == 4 || i == 5 { // idle, iowait
			continue
		}
		v, _ := strconv.ParseInt(f[i], 10, 64)
		busy += time.Duration(v) * clockTick
	}
	return busy, nil
}

// readStat reads /proc/PID/stat for pid ("self" for this process): the
// command name and the user and system time the process has used.
func readStat(pid string) (string, time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return "", 0, fmt.Errorf("cpu of process %s: %w", pid, err)
	}
	comm, used, ok := parseStat(b)
	if !ok {
		return "", 0, fmt.Errorf("cpu of process %s: unreadable stat line", pid)
	}
	return comm, used, nil
}

// parseStat parses a /proc/PID/stat line. The command name is in
// parentheses and may itself hold spaces and parentheses, so the fields
// are counted from its last closing one: utime and stime are the 12th and
// 13th after it.
func parseStat(b []byte) (string, time.Duration, bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return "", 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, false
	}
	return string(b[open+1 : end]), time.Duration(ut+st) * clockTick, true
}

// Usage is the CPU time spent over a window (or several, added), and the
// window's wall time.
type Usage struct {
	Wall, Busy, Self, Postgres, Temporal time.Duration
}

// Sub is what was spent from o to s. PostgreSQL's and the Temporal
// server's shares are summed per process, so that backends that come and
// go never make a share negative: a process that exited in between takes
// its time with it, one that began (or whose pid was taken anew) counts
// whole.
func (s Sample) Sub(o Sample) Usage {
	u := Usage{Wall: s.At.Sub(o.At), Busy: s.Busy - o.Busy, Self: s.Self - o.Self}
	for pid, p := range s.procs {
		used := p.used
		if before, ok := o.procs[pid]; ok && before.temporal == p.temporal && before.used <= used {
			used -= before.used
		}
		if p.temporal {
			u.Temporal += used
		} else {
			u.Postgres += used
		}
	}
	return u
}

// Add sums two windows' usage, as for the timed phases of several rounds.
func (u Usage) Add(o Usage) Usage {
	return Usage{Wall: u.Wall + o.Wall, Busy: u.Busy + o.Busy, Self: u.Self + o.Self,
		Postgres: u.Postgres + o.Postgres, Temporal: u.Temporal + o.Temporal}
}

// PerEvent formats u spread over n events, in milliseconds of CPU each:
// the machine's, and by whom ("n/a" for no events). The rest of the
// machine is whatever the machine spent beyond the three it names.
func (u Usage) PerEvent(n int) string {
	if n == 0 {
		return "n/a"
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	rest := u.Busy - u.Self - u.Postgres - u.Temporal
	return fmt.Sprintf("%.2f ms (bench process %.2f, PostgreSQL %.2f, Temporal server %.2f, rest of the machine %.2f)",
		ms(u.Busy), ms(u.Self), ms(u.Postgres), ms(u.Temporal), ms(rest))
}

// MsPerEvent is the machine's busy CPU per event, in milliseconds (0 for
// no events).
func (u Usage) MsPerEvent(n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(u.Busy) / float64(time.Millisecond) / float64(n)
}

// Cores is how many cores each was busy on average over a window.
type Cores struct{ Self, Postgres, Temporal float64 }

// Cores is u over its wall time: this process's, PostgreSQL's and the
// Temporal server's CPU time per second. A window of no wall time is all
// zero.
func (u Usage) Cores() Cores {
	wall := u.Wall.Seconds()
	if wall <= 0 {
		return Cores{}
	}
	return Cores{Self: u.Self.Seconds() / wall, Postgres: u.Postgres.Seconds() / wall, Temporal: u.Temporal.Seconds() / wall}
}

// Placement says on which CPUs this process and the Temporal server's
// processes (named temporal or temporal-server) may run, their affinity,
// and whether they share any. On a machine of few cores a server that
// shares the bench's CPUs is paid for every millisecond the relay spends
// (its process and its PostgreSQL backend) with the server's own starts,
// so a relay's rate against a bare client's then measures who wins a
// shared core besides whether the relay keeps the server busy; in
// production the relay and the server run on different machines, and
// taskset pins them apart here.
func Placement() string {
	self, selfSet, ok := CPUsAllowed("self")
	if !ok {
		return "CPU placement unknown (no /proc)"
	}
	var servers []string
	shared := false
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid := d.Name()
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		comm, _, err := readStat(pid)
		if err != nil || (comm != "temporal" && comm != "temporal-server") {
			continue
		}
		list, set, ok := CPUsAllowed(pid)
		if !ok {
			continue
		}
		servers = append(servers, fmt.Sprintf("%s (pid %s) on CPUs %s", comm, pid, list))
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

// CPUsAllowed reads the affinity of process pid ("self" for this one),
// Cpus_allowed_list in /proc/PID/status: the kernel's list (such as 0-1 or
// 0,2-3) and the CPUs in it; false when it cannot be read.
func CPUsAllowed(pid string) (string, map[int]bool, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return "", nil, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			v = strings.TrimSpace(v)
			set, err := ParseCPUList(v)
			return v, set, err == nil
		}
	}
	return "", nil, false
}

// ParseCPUList parses a kernel CPU list: comma-separated CPUs and ranges.
func ParseCPUList(s string) (map[int]bool, error) {
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

// PIDServing is the process, other than this one, whose command line holds
// every one of words as a whole argument (a dev server: "start-dev" and its
// port), so that a benchmark can name the server it started to a Meter; 0
// when none does.
func PIDServing(words ...string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		found := 0
		for _, w := range words {
			for _, a := range args {
				if a == w {
					found++
					break
				}
			}
		}
		if found == len(words) {
			return pid
		}
	}
	return 0
}

// Machine names the CPU model and the memory, from /proc/cpuinfo and
// /proc/meminfo ("unknown" for what cannot be read), for a report's header:
// figures from machines of other kinds are not to be set side by side.
func Machine() string {
	model, mem := "unknown model", "unknown memory"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
				break
			}
		}
	}
	return model + ", " + mem
}

// FollowMe gives process pid this process's CPU affinity: a PostgreSQL
// backend serving a benchmark then runs where the benchmark runs. Run
// apart from the Temporal server (taskset), a relay's backend would
// otherwise still take the server's CPUs, and the relay's database work
// would again be paid for with the server's starts. It fails where the
// backend is not on this machine or not this user's to change (then the
// placement stays the kernel's, and Placement cannot tell).
func FollowMe(pid int) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return fmt.Errorf("this process's CPUs: %w", err)
	}
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		return fmt.Errorf("placing process %d on this process's CPUs: %w", pid, err)
	}
	return nil
}
