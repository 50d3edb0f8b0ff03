package proclock_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/lockfs"
)

// countingFS is the OS's FS, counting the calls a lock makes through it
// by method and name.
type countingFS struct {
	lockfs.FS
	mu    sync.Mutex
	calls map[string]int
}

func newCountingFS() *countingFS { return &countingFS{FS: lockfs.OS(), calls: map[string]int{}} }

func (c *countingFS) count(call, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[call+" "+filepath.Base(name)]++
}

func (c *countingFS) OpenNoFollow(name string) (lockfs.File, error) {
	c.count("OpenNoFollow", name)
	return c.FS.OpenNoFollow(name)
}

func (c *countingFS) OpenLook(name string) (lockfs.File, error) {
	c.count("OpenLook", name)
	return fsx.OpenLook(c.FS, name)
}

func (c *countingFS) DirID(dir string) (lockfs.FileID, error) {
	c.count("DirID", dir)
	return c.FS.DirID(dir)
}

func (c *countingFS) FileIDOf(f lockfs.File) (lockfs.FileID, error) {
	c.count("FileIDOf", f.Name())
	return c.FS.FileIDOf(f)
}

func (c *countingFS) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

// IsHeld of a file lock that another live process holds reads the lock
// file once, through a look (fsx.OpenLook) whose one stat also
// identifies it (fsx.StatID: no FileIDOf), and reads no mark, since a
// live stamp holds the lock whatever the mark says; with nothing held in
// this process, it stats no directory for a turn key. No descriptor on the
// file outlives a call (docs/design.md, "Module state").
func TestIsHeldHeldFileCalls(t *testing.T) {
	locktest.SkipOnWine(t, locktest.WineBirthTime)
	path := filepath.Join(t.TempDir(), "app.lock")
	cmd := gcHolder.Command(string(proclock.MechanismFile), path)
	cmd.Stderr = os.Stderr
	c := locktest.Start(t, cmd)
	defer c.End()
	if line, err := c.Line(); err != nil || line != "collected" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	fsys := newCountingFS()
	p := nativePlatform(proclock.MechanismFile)
	p.FS = fsys
	if held, err := proclock.IsHeld(context.Background(), p, path); err != nil || !held {
		t.Fatalf("IsHeld = %v, %v; want held", held, err)
	}
	got := fsys.snapshot()
	want := map[string]int{"OpenLook app.lock": 1}
	if proclock.TurnsEmpty() {
		want["DirID "+filepath.Base(filepath.Dir(path))] = 0
	} else {
		t.Log("a lock is held or attempted in this process: the turn key's DirID is not counted")
		for k := range got {
			if strings.HasPrefix(k, "DirID ") {
				delete(got, k)
			}
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && v != 0 {
			t.Errorf("IsHeld called %s %d times, want none", k, v)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("IsHeld called %s %d times, want %d", k, got[k], v)
		}
	}
	for i := range 3 {
		if n := descriptorsOn(t, path); n != 0 {
			t.Fatalf("after IsHeld %d: %d descriptors of this process on the lock file; want none", i+1, n)
		}
		if held, err := proclock.IsHeld(context.Background(), p, path); err != nil || !held {
			t.Fatalf("IsHeld again = %v, %v; want held", held, err)
		}
	}
}

// descriptorsOn counts this process's descriptors open on path's file.
func descriptorsOn(t *testing.T, path string) int {
	t.Helper()
	want, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if info, err := os.Stat(filepath.Join("/proc/self/fd", fd.Name())); err == nil && os.SameFile(info, want) {
			n++
		}
	}
	return n
}
