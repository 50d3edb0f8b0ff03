package app_test

import (
	"io/fs"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// guestPlatform is the platform the app gets when a wasm host runs it:
// the file mechanism, and no wake-up source (a guest has no inotify), so
// that waits poll. In production the host builds it; here it is made from
// a fake process, so that the suite can put it through every case.
func guestPlatform(p *fake.Process) *platform.Platform {
	pp := p.Platform().WithoutSQLite()
	pp.Wake = nil
	return pp
}

// guestHarness is a conformance.Harness of our own: its peers lock through
// guestPlatform. Its worlds are MixedWorlds, whose SpawnMechanism starts
// native-like SQLite peers beside the guests, so that the cases of both
// mechanisms on one path run too.
type guestHarness struct{}

func (guestHarness) Mechanism() proclock.Mechanism { return proclock.MechanismFile }

func (guestHarness) New(t *testing.T) conformance.World {
	w := fake.New()
	if err := w.Mkdir("/locks", 0o755); err != nil {
		t.Fatal(err)
	}
	return guestWorld{w}
}

type guestWorld struct{ w *fake.World }

func (gw guestWorld) Dir() string    { return "/locks" }
func (gw guestWorld) FS() lockfs.FS  { return gw.w.FS() }
func (gw guestWorld) Now() time.Time { return gw.w.Now() }

// Mkdir stages a directory, as conformance's cases need one.
func (gw guestWorld) Mkdir(name string, perm fs.FileMode) error { return gw.w.Mkdir(name, perm) }

func (gw guestWorld) Advance(d time.Duration) bool {
	gw.w.Advance(d)
	return true
}

func (gw guestWorld) Spawn(t *testing.T) conformance.Peer {
	return gw.SpawnMechanism(t, proclock.MechanismFile)
}

func (gw guestWorld) SpawnMechanism(t *testing.T, mech proclock.Mechanism) conformance.Peer {
	proc := gw.w.Spawn()
	p := proc.Platform() // a native process: SQLite, woken by changes
	if mech == proclock.MechanismFile {
		p = guestPlatform(proc)
	}
	return conformance.FakePeer(proc, p)
}

// The suite, run on the guest's platform.
func TestConformanceGuest(t *testing.T) {
	conformance.Run(t, guestHarness{})
}
