package lockrec

import (
	"reflect"
	"sync"
	"time"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Age is how long ago, by p's clock, the file name (id) was written at
// mtime; an mtime ahead of the clock counts from first sight
// (docs/protocol.md, "Judging what is there").
func Age(p *platform.Platform, id lockfs.FileID, name string, mtime time.Time) time.Duration {
	clock := p.Time()
	now := clock.Now()
	if age := now.Sub(mtime); age >= 0 {
		return age
	}
	if mtime.Sub(now) > MarkWindow {
		return MarkWindow + time.Nanosecond
	}
	k := aheadKey{name: name, dev: id.Dev, ino: id.Ino, mtime: mtime.UnixNano()}
	if reflect.TypeOf(clock).Comparable() {
		k.clock = clock
	}
	aheadMu.Lock()
	defer aheadMu.Unlock()
	at, ok := ahead[k]
	if !ok || at.After(now) {
		if len(ahead) >= maxAhead {
			clear(ahead) // at worst, a file's window starts again
		}
		ahead[k], at = now, now
	}
	return now.Sub(at)
}

// ahead remembers when this process first saw each file whose mtime was
// ahead of its clock (docs/design.md, "Module state").
var (
	aheadMu sync.Mutex
	ahead   = map[aheadKey]time.Time{}
)

const maxAhead = 1024

type aheadKey struct {
	clock    any // the clock read (a fake world's differs from another's)
	name     string
	dev, ino uint64
	mtime    int64
}
