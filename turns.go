package proclock

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"

	"github.com/proclock/proclock/platform"
)

// turnKey names one lock inside this process: the platform's FS value,
// whichever mechanism takes it, its directory's identity, which every
// path to it shares, and its base name.
type turnKey struct {
	world          any
	dirDev, dirIno uint64
	base           string
}

// turns is the process-wide table of locks held or being attempted here:
// acquisitions of one lock take turns in memory, first come first served,
// so a process never races itself on disk.
var turns = turnTable{m: map[turnKey]*turnQueue{}}

type turnTable struct {
	mu sync.Mutex
	m  map[turnKey]*turnQueue
	// gaveUp, when set, is called by an acquisition whose ctx ended
	// while it waited, before it leaves the queue (for tests).
	gaveUp func()
}

// turnQueue is one lock's turn: taken by one acquisition, with others
// queued behind it. A key with no queue is free.
type turnQueue struct {
	// holder is the lock once held: kept reachable here until released,
	// or the garbage collector would close its files.
	holder  *Lock
	waiters []*turnWaiter
	parked  bool // the turn is kept by a wait queued in the kernel (park)
}

// turnWaiter is an acquisition queued for a lock's turn.
type turnWaiter struct {
	ready  chan struct{} // closed when the turn is its
	path   string        // as given to its Acquire
	terms  handoffTerms
	handed *Lock // the lock handed over still held (handOver), if so
}

// handoffTerms are what an acquisition would hold a lock with, beyond its
// turn key: a held lock is handed over only to a waiter on its holder's
// terms. The zero terms match nothing.
type handoffTerms struct {
	ok      bool
	sqlite  platform.SQLite // nil: the file mechanism
	process platform.Process
	remove  bool
	netFS   bool
}

// termsOf are the terms of an acquisition through p with opts; none (the
// zero terms) when p's Process cannot be compared.
func termsOf(p *platform.Platform, opts Options) handoffTerms {
	if p.Process != nil && !reflect.TypeOf(p.Process).Comparable() {
		return handoffTerms{}
	}
	return handoffTerms{ok: true, sqlite: p.SQLite, process: p.Process, remove: opts.RemoveOnRelease, netFS: opts.AllowNetworkFS}
}

// enter's errors for a caller that would not wait: another acquisition
// of this process holds or attempts the lock, or a wait of this process
// is still queued in the kernel for it (park).
var (
	errTurnTaken  = errors.New("proclock: lock taken in this process")
	errTurnParked = errors.New("proclock: a wait of this process is queued for the lock")
)

// enter takes key's turn: at once when it is free, else, with wait, after
// every acquisition queued before it has left, or not at all when ctx ends
// first. A lock handed over still held (handOver) is returned.
func (t *turnTable) enter(ctx context.Context, key turnKey, wait bool, path string, terms handoffTerms) (*Lock, error) {
	t.mu.Lock()
	q, taken := t.m[key]
	if !taken {
		t.m[key] = &turnQueue{}
		t.mu.Unlock()
		return nil, nil
	}
	if !wait {
		parked := q.parked
		t.mu.Unlock()
		if parked {
			return nil, errTurnParked
		}
		return nil, errTurnTaken
	}
	w := &turnWaiter{ready: make(chan struct{}), path: path, terms: terms}
	q.waiters = append(q.waiters, w)
	t.mu.Unlock()

	select {
	case <-w.ready:
		if ctx.Err() == nil {
			return w.handed, nil
		}
	case <-ctx.Done():
	}
	if t.gaveUp != nil {
		t.gaveUp()
	}
	t.mu.Lock()
	if i := slices.Index(q.waiters, w); i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
		t.mu.Unlock()
		return nil, ctx.Err()
	}
	t.mu.Unlock()
	// The turn, or the lock, came just as ctx ended: pass it on.
	if w.handed != nil {
		t.release(w.handed)
	} else {
		t.leave(key)
	}
	return nil, ctx.Err()
}

// leave gives key's turn to the next in line, or frees it.
func (t *turnTable) leave(key turnKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.m[key]
	q.holder, q.parked = nil, false
	if len(q.waiters) == 0 {
		delete(t.m, key)
		return
	}
	next := q.waiters[0]
	q.waiters = q.waiters[1:]
	close(next.ready)
}

// park keeps key's turn, given up by an acquisition whose wait is still
// queued in the kernel, until done is closed: a process has at most one
// wait queued for one lock, however often its acquisitions give up.
func (t *turnTable) park(key turnKey, done <-chan struct{}) {
	t.mu.Lock()
	t.m[key].parked = true
	t.mu.Unlock()
	go func() {
		<-done
		t.leave(key)
	}()
}

// release is l's Release: l is handed over to the next acquisition in line
// (handOver), or let go and the turn left.
func (t *turnTable) release(l *Lock) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopWatch() // a lock let go of was not lost
	if l.released {
		return nil
	}
	if !l.left && t.handOver(l) {
		l.released, l.left = true, true
		return nil
	}
	err := l.release()
	l.released = err == nil
	if !l.left {
		l.left = true
		t.leave(l.key)
	}
	return err
}

// handOver gives l, still held, to the next acquisition in line when it
// would hold it on l's terms, and reports whether it did; the lock's files
// and kernel locks stay as they are (docs/design.md, "Waiting").
func (t *turnTable) handOver(l *Lock) bool {
	if !l.terms.ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.m[l.key]
	if q == nil || q.holder != l || len(q.waiters) == 0 || q.waiters[0].terms != l.terms {
		return false
	}
	next := q.waiters[0]
	q.waiters = q.waiters[1:]
	next.handed = &Lock{path: next.path, mech: l.mech, holder: l.holder, release: l.release, file: l.file, key: l.key, terms: l.terms, p: l.p, check: l.check}
	q.holder = next.handed
	close(next.ready)
	return true
}

// hold records that the acquisition whose turn it is now holds key, as l.
func (t *turnTable) hold(key turnKey, l *Lock) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[key].holder = l
}

// empty reports whether no lock is held or attempted in this process.
func (t *turnTable) empty() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m) == 0
}

// held reports whether an acquisition in this process holds key.
func (t *turnTable) held(key turnKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	q, ok := t.m[key]
	return ok && q.holder != nil
}
