package main

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProcCPU: the name may hold spaces and parentheses; the times are the
// fields after it.
func TestProcCPU(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stat")
	require.NoError(t, os.WriteFile(p, []byte("4242 (temporal (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0\n"), 0o600))
	comm, used, ok := procCPU(p)
	require.True(t, ok)
	require.Equal(t, "temporal (x) y", comm)
	require.Equal(t, 3*time.Second, used)
	_, _, ok = procCPU(filepath.Join(t.TempDir(), "missing"))
	require.False(t, ok)
}

// TestSampleCPUSeesThisProcess: a busy loop shows as this process's CPU and
// the machine's.
func TestSampleCPUSeesThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before := sampleCPU()
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	d := sampleCPU().sub(before)
	require.Greater(t, d.self, 100*time.Millisecond)
	require.Greater(t, d.busy, 50*time.Millisecond)
}

// TestCPUSampleSubPerProcess: a backend that exited takes its time with it,
// one that began counts whole; no share goes negative.
func TestCPUSampleSubPerProcess(t *testing.T) {
	before := cpuSample{busy: 10 * time.Second, procs: map[int]procTime{
		1: {used: 4 * time.Second}, 2: {used: 3 * time.Second}, 9: {temporal: true, used: 5 * time.Second},
	}}
	after := cpuSample{busy: 12 * time.Second, procs: map[int]procTime{
		1: {used: 4500 * time.Millisecond}, 3: {used: 200 * time.Millisecond}, 9: {temporal: true, used: 6 * time.Second},
	}}
	d := after.sub(before)
	require.Equal(t, 2*time.Second, d.busy)
	require.Equal(t, 700*time.Millisecond, d.postgres)
	require.Equal(t, time.Second, d.temporal)
}

// TestParseCPUList: single CPUs and ranges, as the kernel writes them.
func TestParseCPUList(t *testing.T) {
	set, err := parseCPUList("0,2-4,7")
	require.NoError(t, err)
	require.Equal(t, map[int]bool{0: true, 2: true, 3: true, 4: true, 7: true}, set)
	_, err = parseCPUList("0-x")
	require.Error(t, err)
}

// TestPlacementNamesThisProcess: the bench's own CPUs are read.
func TestPlacementNamesThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	list, set, ok := cpusAllowed("self")
	require.True(t, ok)
	require.NotEmpty(t, set)
	require.Contains(t, placement(), "bench on CPUs "+list)
}
