package platform_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// statStartTime reads field 22 (starttime) of /proc/<pid>/stat, counting
// fields after the command name, which ends at the line's last ')', and
// puts it on the host's clock, as Identity.StartTime is: less this
// process's boot-time offset (whole ticks assumed).
func statStartTime(t *testing.T, pid string) uint64 {
	_, offset := testTimeNamespace(t)
	return rawStartTime(t, pid) - uint64(offset/(1e9/100))
}

// rawStartTime is field 22 of /proc/<pid>/stat, as it reads here.
func rawStartTime(t *testing.T, pid string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	line := string(b)
	fields := strings.Fields(line[strings.LastIndex(line, ")")+1:])
	n, err := strconv.ParseUint(fields[22-3], 10, 64)
	if err != nil {
		t.Fatalf("/proc/%s/stat: %v", pid, err)
	}
	return n
}

// testTimeNamespace is this process's time namespace and the offset of
// its boot-time clock in nanoseconds (whole ticks, as unshare(1) sets
// them, assumed), or 0s on a kernel without time namespaces.
func testTimeNamespace(t *testing.T) (uint64, int64) {
	t.Helper()
	fi, err := os.Stat("/proc/self/ns/time")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/timens_offsets")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		var clock string
		var secs, nanos int64
		if n, _ := fmt.Sscan(line, &clock, &secs, &nanos); n == 3 && clock == "boottime" {
			return fi.Sys().(*syscall.Stat_t).Ino, secs*1e9 + nanos
		}
	}
	t.Fatalf("/proc/self/timens_offsets without a boottime line: %q", b)
	return 0, 0
}

func TestNativeSelf(t *testing.T) {
	self := nativeSelf(t)

	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	timeNS, offset := testTimeNamespace(t)
	want := platform.Identity{
		Host:          host,
		BootID:        strings.TrimSpace(string(boot)),
		PID:           os.Getpid(),
		StartTime:     statStartTime(t, "self"),
		PIDNamespace:  fi.Sys().(*syscall.Stat_t).Ino,
		TimeNamespace: timeNS,
		BootOffset:    offset,
		LauncherPID:   platform.ParseLauncherPID(os.Getenv(platform.LauncherEnv)),
	}
	if self != want {
		t.Errorf("Self() = %+v\nwant     %+v", self, want)
	}
	if self.StartTime == 0 || self.BootID == "" || self.PIDNamespace == 0 {
		t.Errorf("Self() = %+v: start time, boot id and namespace should all be known on linux", self)
	}

	again := nativeSelf(t)
	if again != self {
		t.Errorf("Self() changed: %+v, then %+v", self, again)
	}
	if platform.Native().Process != platform.Native().Process {
		t.Error("two Native() platforms have different Process values; they must share one")
	}
}

func TestNativeLookupBadPID(t *testing.T) {
	// kill(0) signals our process group and kill(-1) every process we
	// may signal: a lookup must refuse them, not answer for them.
	for _, pid := range []int{0, -1, -5} {
		info, err := platform.Native().Process.Lookup(pid)
		if err == nil {
			t.Errorf("Lookup(%d) = %+v, nil; want an error", pid, info)
		}
	}
}

func TestNativeLookupInit(t *testing.T) {
	p := platform.Native().Process
	self := nativeSelf(t)

	// Pid 1 runs in every pid namespace; when not root, signal 0 answers
	// EPERM, which still means it exists.
	info, err := p.Lookup(1)
	if err != nil || !info.Exists {
		t.Fatalf("Lookup(1) = %+v, %v; want exists", info, err)
	}
	if _, err := os.ReadFile("/proc/1/stat"); err == nil {
		if want := statStartTime(t, "1"); info.StartTime != want {
			t.Errorf("Lookup(1).StartTime = %d, want %d", info.StartTime, want)
		}
	}
	initID := platform.Identity{Host: self.Host, BootID: self.BootID, PID: 1, StartTime: info.StartTime, PIDNamespace: self.PIDNamespace}
	if j := platform.Judge(self, initID, p.Lookup); j.Verdict != platform.Alive || j.Reason != platform.ReasonRunning {
		t.Errorf("Judge(pid 1) = %v (%s), want alive (%s)", j.Verdict, j.Reason, platform.ReasonRunning)
	}
}

// TestNativeChild follows a child process through its life: running, a
// zombie once killed, gone once reaped.
func TestNativeChild(t *testing.T) {
	p := platform.Native().Process
	self := nativeSelf(t)

	c := locktest.Start(t, locktest.Block.Command())
	pid := c.Pid()
	child := platform.Identity{
		Host:         self.Host,
		BootID:       self.BootID,
		PID:          pid,
		StartTime:    statStartTime(t, strconv.Itoa(pid)),
		PIDNamespace: self.PIDNamespace,
	}

	info, err := p.Lookup(pid)
	if err != nil || !info.Exists || info.StartTime != child.StartTime {
		t.Errorf("Lookup(child) = %+v, %v; want exists with start time %d", info, err, child.StartTime)
	}
	if j := platform.Judge(self, child, p.Lookup); j.Verdict != platform.Alive || j.Reason != platform.ReasonRunning {
		t.Errorf("Judge(running child) = %v (%s), want alive (%s)", j.Verdict, j.Reason, platform.ReasonRunning)
	}

	// Killed but not reaped: wait for the exit with WNOWAIT, which leaves
	// the child a zombie for cmd.Wait to reap later.
	if err := c.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var si unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	if state := statState(t, pid); state != "Z" {
		t.Fatalf("child state %q after waitid, want a zombie", state)
	}
	if info, err := p.Lookup(pid); err != nil || info.Exists {
		t.Errorf("Lookup(zombie child) = %+v, %v; want not existing", info, err)
	}
	if j := platform.Judge(self, child, p.Lookup); j.Verdict != platform.Dead || j.Reason != platform.ReasonPIDGone {
		t.Errorf("Judge(zombie child) = %v (%s), want dead (%s)", j.Verdict, j.Reason, platform.ReasonPIDGone)
	}

	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("cmd.Wait() = %v, want killed by SIGKILL", err)
	}
	if info, err := p.Lookup(pid); err != nil || info.Exists {
		t.Errorf("Lookup(reaped child) = %+v, %v; want not existing", info, err)
	}
	if j := platform.Judge(self, child, p.Lookup); j.Verdict != platform.Dead || j.Reason != platform.ReasonPIDGone {
		t.Errorf("Judge(reaped child) = %v (%s), want dead (%s)", j.Verdict, j.Reason, platform.ReasonPIDGone)
	}
}

// statState reads field 3 (state) of /proc/<pid>/stat.
func statState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))[0]
}

// TestNativeLauncherPID runs a child copy of the test binary, since Self is
// read once per process, and reads the launcher pid it records.
func TestNativeLauncherPID(t *testing.T) {
	tests := []struct {
		env  string // value of PROCLOCK_LAUNCHER_PID; "-" leaves it unset
		want int
	}{
		{"4240", 4240},
		{"x", 0},
		{"0", 0},
		{"-", 0},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			cmd := launcherRole.Command()
			cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, platform.LauncherEnv+"=") })
			if tt.env != "-" {
				cmd.Env = append(cmd.Env, platform.LauncherEnv+"="+tt.env)
			}
			out := locktest.Output(t, cmd)
			got, err := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				t.Fatalf("helper printed %q: %v", out, err)
			}
			if got != tt.want {
				t.Errorf("with %s=%q, Self().LauncherPID = %d, want %d", platform.LauncherEnv, tt.env, got, tt.want)
			}
		})
	}
}

// leaderExitScript makes a process whose main thread exits (pthread_exit)
// while another thread runs on: its /proc/<pid>/stat shows a zombie, yet
// the process lives and keeps its files.
const leaderExitScript = `
import ctypes, os, sys, threading
threading.Thread(target=sys.stdin.read).start()
print(os.getpid(), flush=True)
ctypes.CDLL(None).pthread_exit(None)
`

// A process whose main thread has exited but whose other threads run is
// alive, though its stat line says Z: only a real zombie is dead.
func TestLeaderExitedProcessIsAlive(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3 to make a process whose main thread exits first (Go's runtime keeps its main thread)")
	}
	c := locktest.Start(t, exec.Command(python, "-c", leaderExitScript))
	defer c.End() // closing stdin ends the last thread
	line, err := c.Line()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	// The leader turns zombie right after printing: wait for that.
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), ") Z ") {
			break
		}
		runtime.Gosched()
	}
	info, err := platform.Native().Process.Lookup(pid)
	if err != nil || !info.Exists {
		t.Fatalf("Lookup(%d) = %+v, %v for a live process whose main thread exited; want it to exist", pid, info, err)
	}
}
