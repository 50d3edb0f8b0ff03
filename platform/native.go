package platform

import (
	"os"
	"sync"

	"github.com/proclock/proclock/lockfs"
)

// The one FS and Process of every native platform: turns are keyed by
// the FS (docs/design.md).
var (
	nativeFS      = lockfs.OS()
	nativeProcess = &selfCache{read: readSelf, lookup: lookupPID}
)

// Native returns the platform of the OS this program runs on. Every call
// returns a new Platform holding the same FS, SQLite and Process values, so
// that all native platforms of a process share turns. SQLite is nil where
// the OS's VFS cannot lock files (wasip1, js). Wake is set on linux only.
func Native() *Platform {
	return &Platform{FS: nativeFS, SQLite: nativeSQLite, Process: nativeProcess, Wake: nativeWake}
}

// selfCache reads this process's identity once; it never changes.
type selfCache struct {
	read   func() (Identity, error)
	lookup func(pid int) (PIDInfo, error)

	once sync.Once
	id   Identity
	err  error
}

func (c *selfCache) Self() (Identity, error) {
	c.once.Do(func() {
		c.id, c.err = c.read()
		if c.err == nil {
			c.id.LauncherPID = parseLauncherPID(os.Getenv(launcherEnv))
		}
	})
	return c.id, c.err
}

func (c *selfCache) Lookup(pid int) (PIDInfo, error) { return c.lookup(pid) }
