//go:build linux || wasip1 || js

package platform

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// statLine is a /proc/<pid>/stat line of pid in state with starttime.
func statLine(pid, state, start string) string {
	return pid + " (agent (x)) " + state + " 1 4336 2642 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 " + start + " 3133440 417 18446744073709551615\n"
}

// fakeProc writes files into a directory laid out as procfs is, for the
// readers that take their procfs as a directory.
func fakeProc(t *testing.T, files map[string]string) procfs {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procfs(root)
}

// A host's procfs as a guest reads it: the host process is pid 7167.
func hostProc(t *testing.T) procfs {
	p := fakeProc(t, map[string]string{
		"self/stat":                 statLine("7167", "R", "15752"),
		"sys/kernel/hostname":       "buildhost\n",
		"sys/kernel/random/boot_id": "14494a81-e189-45c1-812b-750d6cc2cbbf\n",
		"4242/stat":                 statLine("4242", "S", "900"),
		"4343/stat":                 statLine("4343", "Z", "901"),
		"4343/status":               "Name:\tx\nThreads:\t1\n",
		"4444/stat":                 statLine("4444", "Z", "902"),
		"4444/status":               "Name:\tx\nThreads:\t3\n",
		"4545/stat":                 "4545 (x) S truncated\n",
	})
	if err := os.MkdirAll(p.path("self/ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pid:[4026531836]", p.path("self/ns/pid")); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProcIdentity(t *testing.T) {
	p := hostProc(t)
	host, err := p.hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{Host: "buildhost", BootID: "14494a81-e189-45c1-812b-750d6cc2cbbf", PID: 7167, StartTime: 15752, PIDNamespace: 4026531836}
	if got, err := p.identity(host, 0); err != nil || got != want {
		t.Errorf("identity(%q, 0) = %+v, %v; want %+v (the pid that self/stat shows)", host, got, err, want)
	}
	want.PID = 99
	if got, err := p.identity(host, 99); err != nil || got != want {
		t.Errorf("identity(%q, 99) = %+v, %v; want %+v", host, got, err, want)
	}
}

func TestProcIdentityMissing(t *testing.T) {
	for _, missing := range []string{"self/stat", "sys/kernel/random/boot_id"} {
		t.Run(missing, func(t *testing.T) {
			p := hostProc(t)
			if err := os.Remove(p.path(missing)); err != nil {
				t.Fatal(err)
			}
			if id, err := p.identity("buildhost", 0); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("identity without %s = %+v, %v; want an error matching fs.ErrNotExist", missing, id, err)
			}
		})
	}
	t.Run("empty boot id", func(t *testing.T) {
		p := hostProc(t)
		if err := os.WriteFile(p.path("sys/kernel/random/boot_id"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if id, err := p.identity("buildhost", 0); !errors.Is(err, errEmptyProcFile) {
			t.Errorf("identity with an empty boot id = %+v, %v; want an error matching errEmptyProcFile", id, err)
		}
	})
	t.Run("no pid namespace", func(t *testing.T) {
		p := hostProc(t)
		if err := os.Remove(p.path("self/ns/pid")); err != nil {
			t.Fatal(err)
		}
		if id, err := p.identity("buildhost", 0); err != nil || id.PIDNamespace != 0 {
			t.Errorf("identity without ns/pid = %+v, %v; want pid namespace 0 (unknown), no error", id, err)
		}
	})
}

func TestProcExited(t *testing.T) {
	p := hostProc(t)
	tests := []struct {
		pid  int
		want bool
	}{
		{4242, false}, // sleeping
		{4343, true},  // a zombie of one thread
		{4444, false}, // a zombie leader whose other threads run
		{4646, true},  // a zombie whose status is gone: it was reaped
	}
	for _, tt := range tests {
		st := procStat{pid: tt.pid, state: 'Z'}
		if tt.pid == 4242 {
			st.state = 'S'
		}
		if got := p.exited(tt.pid, st); got != tt.want {
			t.Errorf("exited(%d, state %c) = %v; want %v", tt.pid, st.state, got, tt.want)
		}
	}
}
