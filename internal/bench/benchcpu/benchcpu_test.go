package benchcpu

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// busyWindow takes m's samples before and after this process has spent
// 300ms of CPU in a busy loop (on Linux only; the test is skipped
// elsewhere). The loop runs until the CPU is spent rather than for a wall
// time: on a busy machine it may get a small part of that.
func busyWindow(t *testing.T, m Meter) (before, after Sample) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	used := func() time.Duration {
		var ru syscall.Rusage
		require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before, err := m.Sample()
	require.NoError(t, err)
	start, end := used(), time.Now().Add(time.Minute)
	for used()-start < 300*time.Millisecond {
		require.True(t, time.Now().Before(end), "no 300ms of CPU within a minute")
	}
	after, err = m.Sample()
	require.NoError(t, err)
	return before, after
}

// TestParseStat: the name may hold spaces and parentheses; the times are
// the fields after it.
func TestParseStat(t *testing.T) {
	comm, used, ok := parseStat([]byte("4242 (temporal (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0\n"))
	require.True(t, ok)
	require.Equal(t, "temporal (x) y", comm)
	require.Equal(t, 3*time.Second, used)
	for _, bad := range []string{"4242 temporal S 1", "4242 (temporal) S 1 4242", "4242 (t) S 1 4242 4242 0 -1 4194560 100 0 0 0 x 50 0"} {
		_, _, ok = parseStat([]byte(bad))
		require.False(t, ok, bad)
	}
	_, _, err := readStat("no-such-process")
	require.Error(t, err)
}

// TestSampleSeesThisProcess: a busy loop shows as this process's CPU and
// the machine's, and the window's wall time is the time between.
func TestSampleSeesThisProcess(t *testing.T) {
	before, after := busyWindow(t, Meter{})
	u := after.Sub(before)
	require.GreaterOrEqual(t, u.Self, 300*time.Millisecond)
	require.Greater(t, u.Busy, 200*time.Millisecond)
	require.Greater(t, u.Wall, 0*time.Second)
	require.InDelta(t, u.Self.Seconds()/u.Wall.Seconds(), u.Cores().Self, 1e-9)
}

// TestSubPerProcess: a backend that exited takes its time with it, one that
// began counts whole, a pid taken anew by another kind of process counts
// whole; no share goes negative.
func TestSubPerProcess(t *testing.T) {
	at := time.Now()
	before := Sample{At: at, Busy: 10 * time.Second, Self: time.Second, procs: map[int]proc{
		1: {used: 4 * time.Second}, 2: {used: 3 * time.Second}, 9: {temporal: true, used: 5 * time.Second},
		12: {used: 100 * time.Millisecond},
	}}
	after := Sample{At: at.Add(4 * time.Second), Busy: 12 * time.Second, Self: 1500 * time.Millisecond, procs: map[int]proc{
		1: {used: 4500 * time.Millisecond}, 3: {used: 200 * time.Millisecond}, 9: {temporal: true, used: 6 * time.Second},
		12: {temporal: true, used: 300 * time.Millisecond},
	}}
	u := after.Sub(before)
	require.Equal(t, Usage{Wall: 4 * time.Second, Busy: 2 * time.Second, Self: 500 * time.Millisecond,
		Postgres: 700 * time.Millisecond, Temporal: 1300 * time.Millisecond}, u)
	require.Equal(t, Cores{Self: 0.125, Postgres: 0.175, Temporal: 0.325}, u.Cores())
}

// TestMeterKind: without a pid, processes named temporal or temporal-server
// are the Temporal server; with one, that process alone is, whatever its
// name. PostgreSQL's processes are found by name either way.
func TestMeterKind(t *testing.T) {
	byName, byPID := Meter{}, Meter{SinkPID: 7}
	for _, tc := range []struct {
		m    Meter
		pid  int
		comm string
		want kind
	}{
		{byName, 5, "temporal", temporal},
		{byName, 5, "temporal-server", temporal},
		{byName, 5, "postgres", postgres},
		{byName, 5, "bench", other},
		{byName, 7, "temporalite", other},
		{byPID, 5, "temporal", other},
		{byPID, 7, "bench", temporal},
		{byPID, 5, "postgres", postgres},
	} {
		require.Equal(t, tc.want, tc.m.kind(tc.pid, tc.comm), "SinkPID %d, pid %d, %s", tc.m.SinkPID, tc.pid, tc.comm)
	}
}

// TestMeterReadsTheNamedSink: a Meter given a pid counts that process as
// the Temporal server (here this process, busy for a while) and says so
// when the process is gone.
func TestMeterReadsTheNamedSink(t *testing.T) {
	before, after := busyWindow(t, Meter{SinkPID: os.Getpid()})
	u := after.Sub(before)
	require.Greater(t, u.Temporal, 200*time.Millisecond)
	require.Equal(t, after.Temporal-before.Temporal, u.Temporal, "the sink is counted once, and no other process")

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	s, err := Meter{SinkPID: gone.Process.Pid}.Sample()
	require.ErrorContains(t, err, "cpu of process "+strconv.Itoa(gone.Process.Pid))
	require.Zero(t, s.Temporal)
	require.Positive(t, s.Busy, "what can be read is read all the same")
}

// TestAddAndPerEvent: windows add up, and their figures per event read as
// the reports print them.
func TestAddAndPerEvent(t *testing.T) {
	a := Usage{Wall: time.Second, Busy: 300 * time.Millisecond, Self: 100 * time.Millisecond, Postgres: 50 * time.Millisecond, Temporal: 60 * time.Millisecond}
	b := Usage{Wall: time.Second, Busy: 100 * time.Millisecond, Self: 20 * time.Millisecond, Postgres: 30 * time.Millisecond, Temporal: 40 * time.Millisecond}
	u := a.Add(b)
	require.Equal(t, Usage{Wall: 2 * time.Second, Busy: 400 * time.Millisecond, Self: 120 * time.Millisecond,
		Postgres: 80 * time.Millisecond, Temporal: 100 * time.Millisecond}, u)
	require.Equal(t, "2.00 ms (bench process 0.60, PostgreSQL 0.40, Temporal server 0.50, rest of the machine 0.50)", u.PerEvent(200))
	require.InDelta(t, 2.0, u.MsPerEvent(200), 1e-9)
	require.Equal(t, "n/a", u.PerEvent(0))
	require.Zero(t, u.MsPerEvent(0))
	require.Equal(t, Cores{}, Usage{Self: time.Second}.Cores(), "no wall time, no cores")
}

// TestParseCPUList: single CPUs and ranges, as the kernel writes them.
func TestParseCPUList(t *testing.T) {
	set, err := ParseCPUList("0,2-4,7")
	require.NoError(t, err)
	require.Equal(t, map[int]bool{0: true, 2: true, 3: true, 4: true, 7: true}, set)
	_, err = ParseCPUList("0-x")
	require.Error(t, err)
}

// TestPlacementNamesThisProcess: the bench's own CPUs are read.
func TestPlacementNamesThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	list, set, ok := CPUsAllowed("self")
	require.True(t, ok)
	require.NotEmpty(t, set)
	require.Contains(t, Placement(), "bench on CPUs "+list)
}

// TestPIDServing: a process is found by whole arguments of its command
// line, all of them, and this process never is.
func TestPIDServing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	word := "benchcpu-test-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("sh", "-c", "read line", word) // waits on its stdin, no child of its own
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	require.Equal(t, cmd.Process.Pid, PIDServing(word, "-c"))
	require.Zero(t, PIDServing(word, "-x"))
	require.Zero(t, PIDServing(word[:len(word)-1]), "a whole argument, not a part of one")
}

// TestMachine: the model and the memory, each read.
func TestMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	require.Regexp(t, `^.+, [0-9]+\.[0-9] GiB$`, Machine())
	require.NotContains(t, Machine(), "unknown")
}

// TestFollowMe places a process confined to one CPU on this process's CPUs,
// as the handoff does with its PostgreSQL backends.
func TestFollowMe(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity is read from /proc")
	}
	require.GreaterOrEqual(t, runtime.NumCPU(), 2, "placing a process needs two CPUs to tell places apart")
	child := exec.Command("sleep", "30")
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	var one unix.CPUSet
	one.Set(0)
	require.NoError(t, unix.SchedSetaffinity(pid, &one))
	list, _, ok := CPUsAllowed(strconv.Itoa(pid))
	require.True(t, ok)
	require.Equal(t, "0", list)

	require.NoError(t, FollowMe(pid))
	mine, _, ok := CPUsAllowed("self")
	require.True(t, ok)
	list, _, ok = CPUsAllowed(strconv.Itoa(pid))
	require.True(t, ok)
	require.Equal(t, mine, list)
	require.Error(t, FollowMe(1<<30), "no such process")
}
