package platform

import (
	"fmt"
	"os"
	"sync"

	"github.com/proclock/proclock/lockfs"
)

// nativeFS is the one FS of every native platform: turns are keyed by it
// (docs/design.md).
var nativeFS = lockfs.OS()

// Native returns the platform of the OS this program runs on. Every call
// returns a new Platform holding the same FS, SQLite and Process values, so
// that all native platforms of a process share turns. SQLite is nil where
// the OS's VFS cannot lock files (wasip1, js). Wake is set on linux only.
func Native() *Platform {
	return &Platform{FS: nativeFS, SQLite: nativeSQLite, Process: osProcess{}, Wake: nativeWake}
}

// osProcess is this OS's Process.
type osProcess struct{}

// self is this process's identity, read once: it never changes.
var self = sync.OnceValues(func() (Identity, error) {
	id, err := readSelf()
	if err == nil {
		id.LauncherPID = parseLauncherPID(os.Getenv(launcherEnv))
	}
	return id, err
})

func (osProcess) Self() (Identity, error) { return self() }

func (osProcess) Lookup(pid int) (PIDInfo, error) {
	if pid <= 0 {
		// kill(0) and kill(-1) name process groups, not a process.
		return PIDInfo{}, fmt.Errorf("platform: lookup of pid %d: not a process id", pid)
	}
	return lookupPID(pid)
}
