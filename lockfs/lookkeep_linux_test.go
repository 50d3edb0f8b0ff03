package lockfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// descriptorsOf counts this process's descriptors open on path.
func descriptorsOf(t *testing.T, path string) int {
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

// A kept look's descriptor outlives its Close, with what the look left
// with it, and the next look at the name is given it without an open; it
// is closed when a look leaves nothing, when the name names another file,
// and by the idle sweep.
func TestKeptLookKeepsDescriptor(t *testing.T) {
	fsys := lockfs.OS()
	path := filepath.Join(t.TempDir(), "app.lock")
	if err := os.WriteFile(path, []byte("stamp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer lockfs.CloseKeptLooks()
	look := func() lockfs.KeptFile {
		t.Helper()
		f, err := lockfs.OpenKeptLook(fsys, path)
		if err != nil {
			t.Fatal(err)
		}
		kf, ok := f.(lockfs.KeptFile)
		if !ok {
			t.Fatalf("OpenKeptLook gave a %T, not a KeptFile", f)
		}
		return kf
	}
	f := look()
	if f.Memo() != nil {
		t.Errorf("a first look's Memo = %v; want nil", f.Memo())
	}
	f.SetMemo("seen")
	f.Close()
	if n := descriptorsOf(t, path); n != 1 {
		t.Fatalf("%d descriptors on the file after a look that left a memo; want 1, kept", n)
	}
	f = look()
	if f.Memo() != "seen" {
		t.Errorf("the next look's Memo = %v; want the last one's", f.Memo())
	}
	if _, _, same, err := f.StatName(); err != nil || !same {
		t.Errorf("StatName of an unchanged file: same %v, %v; want same", same, err)
	}
	if n := descriptorsOf(t, path); n != 1 {
		t.Errorf("%d descriptors on the file while a kept look reads it; want 1 (no open)", n)
	}
	f.Close()

	// Another file at the name: the kept descriptor is not it.
	next := path + ".next"
	if err := os.WriteFile(next, []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	f = look()
	if _, _, same, err := f.StatName(); err != nil || same {
		t.Errorf("StatName after another file took the name: same %v, %v; want not same", same, err)
	}
	if _, _, err := fsx.StatID(fsys, f); err == nil {
		t.Errorf("StatID of a kept descriptor whose name names another file: no error")
	}
	f.Forget()

	// A look that leaves nothing keeps nothing.
	f = look()
	if _, _, err := fsx.StatID(fsys, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := descriptorsOf(t, path); n != 0 {
		t.Errorf("%d descriptors on the file after a look that left no memo; want 0", n)
	}

	// Idle: closed by the second sweep after its last look.
	f = look()
	f.SetMemo("seen")
	f.Close()
	lockfs.SweepKeptLooks()
	if n := descriptorsOf(t, path); n != 1 {
		t.Errorf("%d descriptors after one sweep; want 1 (looked at since the last)", n)
	}
	lockfs.SweepKeptLooks()
	if n := descriptorsOf(t, path); n != 0 {
		t.Errorf("%d descriptors after two sweeps without a look; want 0", n)
	}
}
