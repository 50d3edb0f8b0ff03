//go:build wasip1 || js

package platform

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestReadSelfFrom(t *testing.T) {
	want := Identity{Host: "buildhost", BootID: "14494a81-e189-45c1-812b-750d6cc2cbbf", PID: 7167, StartTime: 15752, PIDNamespace: 4026531836}
	if got, err := readSelfFrom(hostProc(t)); err != nil || got != want {
		t.Fatalf("readSelfFrom = %+v, %v; want %+v", got, err, want)
	}
}

// A guest given no /proc is told what would make its identity readable.
func TestReadSelfWithoutProc(t *testing.T) {
	id, err := readSelfFrom(procfs(t.TempDir() + "/proc"))
	if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("readSelfFrom(no proc) = %+v, %v; want an error matching errors.ErrUnsupported and fs.ErrNotExist", id, err)
	}
	if !strings.HasSuffix(err.Error(), errNoProcHint) {
		t.Errorf("readSelfFrom(no proc): %v; want it to end in %q", err, errNoProcHint)
	}
}

func TestLookupFrom(t *testing.T) {
	p := hostProc(t)
	tests := []struct {
		pid     int
		want    PIDInfo
		wantErr bool
	}{
		{pid: 4242, want: PIDInfo{Exists: true, StartTime: 900}},
		{pid: 4343}, // a zombie: exited
		{pid: 4444, want: PIDInfo{Exists: true, StartTime: 902}}, // a zombie leader, threads running
		{pid: 4646},                // no such pid
		{pid: 4545, wantErr: true}, // a stat that says nothing for certain
	}
	for _, tt := range tests {
		got, err := lookupFrom(p, p.timeClock(), tt.pid)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("lookupFrom(%d) = %+v, %v; want %+v, error %v", tt.pid, got, err, tt.want, tt.wantErr)
		}
	}
}

// hostPIDOrSkip is the host process's pid, as /proc/self/stat tells it; a
// test that needs it is skipped, saying why, in a guest given no /proc.
func hostPIDOrSkip(t *testing.T) int {
	t.Helper()
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("this guest has no /proc (%v): run it as docs/wasm.md says", err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(stat))[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// Under a host that mounts its /proc (wazero run -mount /:/, Node.js), the
// native platform is the host process's, and looks up pids there.
func TestNativeGuest(t *testing.T) {
	hostPID := hostPIDOrSkip(t)
	p := Native()
	if p.SQLite != nil {
		t.Errorf("Native().SQLite = %v; want nil (the file mechanism) in a guest", p.SQLite)
	}
	self, err := p.Process.Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PID != hostPID || self.BootID == "" || self.StartTime == 0 || self.Host == "wasip1" || self.Host == "js" {
		t.Errorf("Self = %+v; want the host process's identity (pid %d)", self, hostPID)
	}
	if _, err := os.Readlink("/proc/self/ns/pid"); err == nil && self.PIDNamespace == 0 {
		t.Errorf("Self = %+v; want the pid namespace that /proc/self/ns/pid names", self)
	}
	if info, err := p.Process.Lookup(self.PID); err != nil || !info.Exists || info.StartTime != self.StartTime {
		t.Errorf("Lookup(host pid %d) = %+v, %v; want it alive, start time %d", self.PID, info, err, self.StartTime)
	}
	// No pid is above pid_max.
	max, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(max)))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := p.Process.Lookup(n + 1); err != nil || info.Exists {
		t.Errorf("Lookup(pid_max+1) = %+v, %v; want not existing", info, err)
	}
}

// What a guest's own runtime answers is not its host's (docs/wasm.md, "Who
// a guest is"): under wasip1 os.Getpid is 3 whatever the host, under js it
// is Node's pid; os.Hostname names the port. Self reads the host's instead.
func TestGuestOwnAnswers(t *testing.T) {
	hostPID := hostPIDOrSkip(t)
	switch pid := os.Getpid(); runtime.GOOS {
	case "wasip1":
		if pid != 3 || pid == hostPID {
			t.Errorf("os.Getpid() = %d under wasip1; want 3, not the host's pid %d", pid, hostPID)
		}
	case "js":
		if pid != hostPID {
			t.Errorf("os.Getpid() = %d under js; want Node's pid, %d", pid, hostPID)
		}
	}
	if name, err := os.Hostname(); err != nil || name != runtime.GOOS {
		t.Errorf("os.Hostname() = %q, %v; want %q", name, err, runtime.GOOS)
	}
	hostname, err := os.ReadFile("/proc/sys/kernel/hostname")
	if err != nil {
		t.Fatal(err)
	}
	self, err := Native().Process.Self()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(hostname)); self.Host != want || self.PID != hostPID {
		t.Errorf("Self = %+v; want host %q and pid %d, the host process's", self, want, hostPID)
	}
}
