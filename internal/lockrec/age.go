package lockrec

import (
	"reflect"
	"sync"
	"time"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Age is how long ago the file name (identity id, zero when unknown) was
// last written, at mtime, by p's clock. An mtime ahead of the clock (a
// clock stepped back since the file was written, or another machine's
// clock) gives no negative age, which would hold the file for as long as
// the step: its age is the time since this process first saw the file
// with that mtime, and past MarkWindow when the mtime is ahead by more
// than that, so that one-shot callers, each seeing the file first, are
// not kept out until the clock catches up: its writer wrote it before a
// step back longer than the window (docs/protocol.md, "Judging what is
// there").
func Age(p *platform.Platform, id lockfs.FileID, name string, mtime time.Time) time.Duration {
	clock := p.Time()
	now := clock.Now()
	if age := now.Sub(mtime); age >= 0 {
		return age
	}
	if mtime.Sub(now) > MarkWindow {
		return MarkWindow + time.Nanosecond
	}
	return now.Sub(ahead.firstSeen(clock, id, name, mtime, now))
}

// ahead remembers when this process first saw each file whose mtime was
// ahead of its clock. A few are kept (maxAhead); a table that fills up is
// emptied, which at worst starts a file's window again.
var ahead = aheadTable{first: map[aheadKey]time.Time{}}

const maxAhead = 1024

type aheadTable struct {
	mu    sync.Mutex
	first map[aheadKey]time.Time
}

type aheadKey struct {
	clock    any // the clock read (a fake world's differs from another's)
	name     string
	dev, ino uint64
	mtime    int64
}

func (t *aheadTable) firstSeen(clock platform.Clock, id lockfs.FileID, name string, mtime, now time.Time) time.Time {
	k := aheadKey{name: name, dev: id.Dev, ino: id.Ino, mtime: mtime.UnixNano()}
	if clock != nil && reflect.TypeOf(clock).Comparable() {
		k.clock = clock
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if at, ok := t.first[k]; ok && !at.After(now) {
		return at
	}
	if len(t.first) >= maxAhead {
		clear(t.first)
	}
	t.first[k] = now
	return now
}
