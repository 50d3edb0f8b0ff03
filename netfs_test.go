package proclock_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
)

// networkFS is a fake FS that says every directory is on NFS (and keeps
// the fake's byte-range locks, which its SQLite locks with).
type networkFS struct {
	lockfs.FS
	fakeRanges
}

func (networkFS) NetworkFS(string) (string, error) { return "nfs", nil }

// A lock on a network filesystem is refused unless the caller opts in, and
// the refusal creates nothing.
func TestNetworkFSRefused(t *testing.T) {
	w := fake.New()
	p := w.Spawn().Platform()
	p.FS = &networkFS{p.FS, fakeRanges{p.FS.(lockfs.RangeLocker)}}
	ctx := context.Background()
	_, err := proclock.Acquire(ctx, p, "/tmp/app.lock", proclock.Options{})
	if !errors.Is(err, proclock.ErrNetworkFS) {
		t.Fatalf("Acquire on NFS = %v; want ErrNetworkFS", err)
	}
	if _, err := w.FS().Lstat("/tmp/app.lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("refused Acquire left a file: %v", err)
	}
	l, err := proclock.Acquire(ctx, p, "/tmp/app.lock", proclock.Options{AllowNetworkFS: true})
	if err != nil {
		t.Fatalf("Acquire on NFS with AllowNetworkFS: %v", err)
	}
	l.Release()
}

// The native FS tells a local directory from a network one.
func TestNativeTempDirIsLocal(t *testing.T) {
	kind, err := lockfs.OS().(lockfs.NetworkFS).NetworkFS(t.TempDir())
	if err != nil || kind != "" {
		t.Fatalf("NetworkFS(temp dir) = %q, %v; want local", kind, err)
	}
}
