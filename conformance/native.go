package conformance

import (
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/internal/peer"
	"github.com/proclock/proclock/lockfs"
)

// MaybeServePeer turns the process into a native peer when the native
// harness started it, and exits when the harness closes its stdin; else it
// returns at once. Call it first in TestMain of any package that runs the
// native harness:
//
//	func TestMain(m *testing.M) {
//		conformance.MaybeServePeer()
//		os.Exit(m.Run())
//	}
func MaybeServePeer() { locktest.MaybePlay() }

// Native returns a harness whose peers are this test binary re-executed as
// real processes on the native platform, locking with mech, and killed
// with SIGKILL. The test binary's TestMain must call MaybeServePeer.
func Native(mech proclock.Mechanism) Harness { return nativeHarness{mech: mech} }

type nativeHarness struct{ mech proclock.Mechanism }

func (h nativeHarness) Mechanism() proclock.Mechanism { return h.mech }

func (h nativeHarness) New(t *testing.T) World {
	return &nativeWorld{mech: h.mech, dir: t.TempDir()}
}

type nativeWorld struct {
	mech proclock.Mechanism
	dir  string
}

func (w *nativeWorld) Dir() string                { return w.dir }
func (w *nativeWorld) FS() lockfs.FS              { return lockfs.OS() }
func (w *nativeWorld) Now() time.Time             { return time.Now() }
func (w *nativeWorld) Advance(time.Duration) bool { return false }
func (w *nativeWorld) Spawn(t *testing.T) Peer    { return peer.Spawn(t, w.mech) }

func (w *nativeWorld) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }

func (w *nativeWorld) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(name, atime, mtime)
}

func (w *nativeWorld) SpawnMechanism(t *testing.T, mech proclock.Mechanism) Peer {
	return peer.Spawn(t, mech)
}
