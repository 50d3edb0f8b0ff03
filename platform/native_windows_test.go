package platform_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// creationTime reads a process's creation time as the test's own call to
// GetProcessTimes, one FILETIME as one number.
func creationTime(t *testing.T, h windows.Handle) uint64 {
	t.Helper()
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		t.Fatal(err)
	}
	return uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime)
}

// filetimeOf is a FILETIME number as a time.
func filetimeOf(ft uint64) time.Time {
	f := windows.Filetime{LowDateTime: uint32(ft), HighDateTime: uint32(ft >> 32)}
	return time.Unix(0, f.Nanoseconds())
}

// Self on windows: the host name, the pid, the creation time
// GetProcessTimes gives, and a boot id that names a moment before this
// process began; no pid namespaces.
func TestNativeSelf(t *testing.T) {
	self := nativeSelf(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := platform.Identity{
		Host:        host,
		BootID:      self.BootID,
		PID:         os.Getpid(),
		StartTime:   creationTime(t, windows.CurrentProcess()),
		LauncherPID: platform.ParseLauncherPID(os.Getenv(platform.LauncherEnv)),
	}
	if self != want {
		t.Errorf("Self() = %+v\nwant     %+v", self, want)
	}
	boot, err := time.Parse("2006-01-02T15:04:05.0000000Z", self.BootID)
	if err != nil {
		t.Fatalf("boot id %q is not the boot's start time: %v", self.BootID, err)
	}
	if started := filetimeOf(self.StartTime); boot.After(started) || started.After(time.Now()) {
		t.Errorf("boot at %v, this process created at %v, now %v: want boot <= creation <= now", boot, started, time.Now())
	}
	if again := nativeSelf(t); again != self {
		t.Errorf("Self() changed: %+v, then %+v", self, again)
	}
}

// Pids that are no process: not an error, and not alive.
func TestNativeLookupMissing(t *testing.T) {
	p := platform.Native().Process
	for _, pid := range []int{math.MaxUint32 &^ 3, math.MaxUint32 + 4} {
		if info, err := p.Lookup(pid); err != nil || info.Exists {
			t.Errorf("Lookup(%d) = %+v, %v; want no such process", pid, info, err)
		}
	}
	for _, pid := range []int{0, -1} {
		if info, err := p.Lookup(pid); err == nil {
			t.Errorf("Lookup(%d) = %+v, nil; want an error", pid, info)
		}
	}
}

// TestNativeChild follows another process through its life: alive while it
// runs, with the identity it tells of itself; dead once it has exited,
// while a handle still keeps its pid taken, and after.
func TestNativeChild(t *testing.T) {
	p := platform.Native().Process
	self := nativeSelf(t)

	c := locktest.Start(t, selfRole.Command())
	var child platform.Identity
	if err := json.NewDecoder(c.Stdout).Decode(&child); err != nil {
		t.Fatalf("the child's identity: %v", err)
	}
	if child.PID != c.Pid() || child.Host != self.Host || child.BootID != self.BootID || child.StartTime == 0 {
		t.Errorf("child's Self() = %+v; want pid %d, host %q, boot %q and a creation time", child, c.Pid(), self.Host, self.BootID)
	}
	if info, err := p.Lookup(child.PID); err != nil || !info.Exists || info.StartTime != child.StartTime {
		t.Errorf("Lookup(child) = %+v, %v; want exists with start time %d", info, err, child.StartTime)
	}
	if j := platform.Judge(self, child, p.Lookup); j.Verdict != platform.Alive || j.Reason != platform.ReasonRunning {
		t.Errorf("Judge(running child) = %v (%s), want alive (%s)", j.Verdict, j.Reason, platform.ReasonRunning)
	}

	// A handle of our own keeps the pid from being reused once it exits.
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(child.PID))
	if err != nil {
		t.Fatal(err)
	}
	c.Stdin.Close()
	ev, err := windows.WaitForSingleObject(h, uint32((30 * time.Second).Milliseconds()))
	if ev != windows.WAIT_OBJECT_0 {
		windows.CloseHandle(h)
		t.Fatalf("the child did not exit: %d, %v", ev, err)
	}
	if info, err := p.Lookup(child.PID); err != nil || info.Exists {
		t.Errorf("Lookup(exited child, pid still taken) = %+v, %v; want not existing", info, err)
	}
	if j := platform.Judge(self, child, p.Lookup); j.Verdict != platform.Dead || j.Reason != platform.ReasonPIDGone {
		t.Errorf("Judge(exited child) = %v (%s), want dead (%s)", j.Verdict, j.Reason, platform.ReasonPIDGone)
	}
	windows.CloseHandle(h)
	if err := c.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if j := platform.Judge(self, child, p.Lookup); j.Verdict != platform.Dead {
		t.Errorf("Judge(child gone) = %v (%s), want dead", j.Verdict, j.Reason)
	}
}

// selfRole prints Self() as JSON, then waits as locktest.Block.
var selfRole = locktest.NewRole("self", func([]string) int {
	id, err := platform.Native().Process.Self()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(id); err != nil {
		return 2
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
})
