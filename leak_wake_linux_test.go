package proclock_test

import (
	"path/filepath"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// The leak check of TestLeaksNative, with the native wake-up source
// (inotify, pidfd, eventfd) in the waits: the cancelled waits close every
// descriptor they open and leave no goroutine behind.
func TestLeaksNativeWake(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
		t.Run(string(mech), func(t *testing.T) {
			dir := t.TempDir()
			n := platform.Native()
			if n.Wake == nil {
				t.Fatal("no native wake-up source on linux")
			}
			p := &platform.Platform{FS: n.FS, SQLite: n.SQLite, Process: n.Process, Wake: n.Wake}
			if mech == proclock.MechanismFile {
				p.SQLite = nil
			}
			w := &leakWorld{
				free:  filepath.Join(dir, "free.lock"),
				held:  filepath.Join(dir, "held.lock"),
				files: openFDs,
			}
			w.setPlatform(p)
			leakHoldElsewhere(t, mech, w.held)
			checkNoLeaks(t, w)
		})
	}
}
