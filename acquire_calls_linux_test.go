package proclock_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// netCountingFS is countingFS with the OS's network-filesystem powers,
// counted too, and its kept directories (fsx.DirOpener), so that
// Acquire keeps the directory as on the OS's FS.
type netCountingFS struct{ *countingFS }

func (c netCountingFS) OpenDir(dir string) (fsx.Dir, error) {
	return lockfs.OS().(fsx.DirOpener).OpenDir(dir)
}

func (c netCountingFS) NetworkFS(dir string) (string, error) {
	c.count("NetworkFS", dir)
	return lockfs.OS().(lockfs.NetworkFS).NetworkFS(dir)
}

// An Acquire looks at the lock's directory once for its turn key and once
// for the network-filesystem check. The file mechanism's: a wrapper of the
// OS's FS would have to forward the byte-range locks for SQLite's, and the
// directory's look is the root's, the same for both.
func TestAcquireLooksAtDirectoryOnce(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismFile} {
		dir := t.TempDir()
		path := filepath.Join(dir, "app.lock")
		fsys := netCountingFS{newCountingFS()}
		p := nativePlatform(mech)
		p.FS = fsys
		l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if err := l.Release(); err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		got := fsys.snapshot()
		base := filepath.Base(dir)
		if got["DirID "+base] != 1 || got["NetworkFS "+base] != 1 {
			t.Errorf("%s: Acquire+Release looked at its directory %d times by DirID, %d by NetworkFS; want 1, 1",
				mech, got["DirID "+base], got["NetworkFS "+base])
		}
	}
}
