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

// A process in a time namespace reads every start time through its own
// boot-time clock: its identity and its lookups put them back on the
// host's, or, where it cannot tell its offset, give none.
func TestProcTimeNamespace(t *testing.T) {
	// inNamespace makes hostProc's reader a process of time namespace
	// 4026532177, whose boot-time clock is offset by offsets' boottime
	// line; children names the namespace of its future children.
	inNamespace := func(t *testing.T, offsets, children string) procfs {
		p := hostProc(t)
		if err := os.Symlink("time:[4026532177]", p.path("self/ns/time")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(children, p.path("self/ns/time_for_children")); err != nil {
			t.Fatal(err)
		}
		if offsets != "" {
			if err := os.WriteFile(p.path("self/timens_offsets"), []byte(offsets), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	const own = "time:[4026532177]"
	tests := []struct {
		name     string
		offsets  string
		children string
		want     timeClock
		start    uint64 // self/stat's 15752 on the host's clock
	}{
		{
			name:     "offset of whole seconds",
			offsets:  "monotonic           0         0\nboottime          100         0\n",
			children: own,
			want:     timeClock{ns: 4026532177, boot: 100e9, known: true},
			start:    15752 - 100*userHZ,
		},
		{
			name:     "offset of a fraction of a tick, negative",
			offsets:  "monotonic 0 0\nboottime -2 995000000\n",
			children: own,
			want:     timeClock{ns: 4026532177, boot: -1005000000, known: true},
			start:    15752 + 101, // -100.5 ticks, rounded down: one late at most
		},
		{
			name:     "clock given by its id",
			offsets:  "1 0 0\n7 3 0\n",
			children: own,
			want:     timeClock{ns: 4026532177, boot: 3e9, known: true},
			start:    15752 - 3*userHZ,
		},
		{
			name:     "offsets unreadable",
			children: own,
			want:     timeClock{ns: 4026532177},
		},
		{
			name:     "offsets without a boottime line",
			offsets:  "monotonic 0 0\n",
			children: own,
			want:     timeClock{ns: 4026532177},
		},
		{
			name:     "a new namespace made for its children: its offsets are theirs",
			offsets:  "monotonic 0 0\nboottime 100 0\n",
			children: "time:[4026532178]",
			want:     timeClock{ns: 4026532177},
		},
		{
			name:     "an offset that puts the start before the host's boot",
			offsets:  "boottime -1000 0\n",
			children: own,
			want:     timeClock{ns: 4026532177, boot: -1000e9, known: true},
			start:    15752 + 1000*userHZ,
		},
		{
			name:     "an offset after the start",
			offsets:  "boottime 1000 0\n",
			children: own,
			want:     timeClock{ns: 4026532177, boot: 1000e9, known: true},
			start:    0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := inNamespace(t, tt.offsets, tt.children)
			if got := p.timeClock(); got != tt.want {
				t.Fatalf("timeClock() = %+v; want %+v", got, tt.want)
			}
			id, err := p.identity("buildhost", 0)
			want := Identity{Host: "buildhost", BootID: "14494a81-e189-45c1-812b-750d6cc2cbbf", PID: 7167,
				StartTime: tt.start, PIDNamespace: 4026531836, TimeNamespace: 4026532177, BootOffset: tt.want.boot}
			if err != nil || id != want {
				t.Errorf("identity = %+v, %v; want %+v", id, err, want)
			}
		})
	}
	t.Run("a kernel without time namespaces", func(t *testing.T) {
		if got := hostProc(t).timeClock(); got != (timeClock{known: true}) {
			t.Errorf("timeClock() without ns/time and timens_offsets = %+v; want the host's clock, known", got)
		}
	})
	t.Run("ns/time missing but offsets there", func(t *testing.T) {
		p := hostProc(t)
		if err := os.WriteFile(p.path("self/timens_offsets"), []byte("boottime 5 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := p.timeClock(); got.known {
			t.Errorf("timeClock() = %+v; want the offset unknown", got)
		}
	})
}
