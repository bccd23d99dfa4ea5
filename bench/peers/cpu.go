package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The CPU split says who spent the machine's CPU while a contender ran at
// saturation: the bench process (the contender's consumer, its handler and,
// in the effect round, the worker that runs the effect's activity), the
// Temporal dev server (the sink), and PostgreSQL (every process named
// postgres: the server's backends). Read from /proc (Linux): clock ticks of
// the processes, turned into cores busy over the window. A backend that
// exits inside the window takes its ticks with it; the contenders' pools
// keep theirs open while they run.

// clockTicks is USER_HZ, 100 on every Linux this runs on (getconf CLK_TCK).
const clockTicks = 100

// cpuSample is one reading: CPU seconds of the bench process, of the sink's
// process (0 without one), and of PostgreSQL's processes, at a wall time.
type cpuSample struct {
	at                 time.Time
	self, sink, server float64
}

// cpuSplit is the cores busy over a window, by who.
type cpuSplit struct{ consumer, sink, postgres float64 }

// cpuMeter reads the samples; sinkPID is the sink's process, 0 for none.
type cpuMeter struct{ sinkPID int }

func (m cpuMeter) sample() (cpuSample, error) {
	s := cpuSample{at: time.Now()}
	var err error
	if s.self, err = processCPU("self"); err != nil {
		return s, err
	}
	if m.sinkPID != 0 {
		if s.sink, err = processCPU(strconv.Itoa(m.sinkPID)); err != nil {
			return s, err
		}
	}
	s.server, err = postgresCPU()
	return s, err
}

// split is the cores busy between a and b.
func split(a, b cpuSample) cpuSplit {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return cpuSplit{}
	}
	return cpuSplit{consumer: (b.self - a.self) / wall, sink: (b.sink - a.sink) / wall, postgres: max(0, b.server-a.server) / wall}
}

// processCPU is utime+stime of /proc/<pid>/stat, in seconds.
func processCPU(pid string) (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, fmt.Errorf("cpu of process %s: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces: the fields
	// after its closing one are fixed, utime and stime the 12th and 13th.
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu of process %s: short stat line", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu of process %s: unreadable stat line", pid)
	}
	return (utime + stime) / clockTicks, nil
}

// postgresCPU is the CPU seconds of every process named postgres.
func postgresCPU() (float64, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("postgres cpu: %w", err)
	}
	var sum float64
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", d.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if cpu, err := processCPU(d.Name()); err == nil { // gone meanwhile: its ticks left with it
			sum += cpu
		}
	}
	return sum, nil
}

// pidServing is the process whose command line holds every one of words
// (the dev server: "start-dev" and its port), 0 when none does.
func pidServing(words ...string) int {
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

// machine names the CPU model and the memory, from /proc/cpuinfo and
// /proc/meminfo ("unknown" for what cannot be read).
func machine() string {
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
