package proclock

import (
	"github.com/proclock/proclock/internal/lockfile"
	"github.com/proclock/proclock/lockfs"
)

func init() {
	lockfile.Of = func(lock any) lockfs.File {
		l, ok := lock.(*Lock)
		if !ok || l == nil {
			return nil
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.released || l.left {
			return nil
		}
		return l.file
	}
}
