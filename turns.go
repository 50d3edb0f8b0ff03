package proclock

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"

	"github.com/proclock/proclock/platform"
)

// turnKey names one lock inside this process: the world it lives in (the
// platform's FS value, whichever mechanism takes it), the identity of its
// directory, which every path to it resolves to, and its base name.
// (The identity costs one stat; resolving the path through its symlinks,
// an lstat per component.)
type turnKey struct {
	world          any
	dirDev, dirIno uint64
	base           string
}

// turns is the process-wide table of locks held or being attempted here.
// Acquisitions of one lock take turns in memory, first come first served,
// so a process never races itself on disk, and never opens SQLite against
// its own holder.
var turns = turnTable{m: map[turnKey]*turnQueue{}}

type turnTable struct {
	mu sync.Mutex
	m  map[turnKey]*turnQueue
	// gaveUp, when set, is called by an acquisition whose ctx ended
	// while it waited, before it leaves the queue: tests hand it the
	// turn then.
	gaveUp func()
}

// turnQueue is one lock's turn: taken by one acquisition, with others
// queued behind it. A key with no queue is free.
type turnQueue struct {
	// holder is the lock while the acquisition whose turn it is holds it
	// (rather than still attempting it). Kept here, it stays reachable
	// until released, whether or not the caller keeps it: the garbage
	// collector would otherwise finalize its open files, and the kernel
	// drop a SQLite lock that a daemon meant to hold for its whole life.
	holder  *Lock
	waiters []*turnWaiter
	// parked: the acquisition whose turn it is gave up while its wait
	// was queued in the kernel, and keeps the turn until that wait ends
	// (park).
	parked bool
}

// turnWaiter is an acquisition queued for a lock's turn.
type turnWaiter struct {
	ready chan struct{} // closed when the turn is its
	path  string        // as given to its Acquire
	terms handoffTerms
	// handed is the lock itself, when the acquisition before it handed
	// it over still held (handOver); nil when it is to take it.
	handed *Lock
}

// handoffTerms are what an acquisition would hold a lock with, beyond its
// turn key: a held lock is handed over only to a waiter whose terms are
// its holder's, since it is held as that holder took it (its mechanism,
// its mark's or stamp's identity, whether its release removes the file).
// The zero terms match nothing.
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

// errTurnTaken says another acquisition of this process holds or is
// attempting the lock, and the caller would not wait.
var errTurnTaken = errors.New("proclock: lock taken in this process")

// errTurnParked says the turn is kept by a wait of this process's still
// queued in the kernel (park), and the caller would not wait.
var errTurnParked = errors.New("proclock: a wait of this process is queued for the lock")

// enter takes key's turn: at once when it is free, else, when wait is set,
// after every acquisition queued before it has left, or not at all when
// ctx ends first (returning ctx.Err()). When the acquisition before it
// hands the lock over still held (handOver), enter returns it.
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
	// The turn, or the lock, was handed over just as ctx ended: pass it
	// on.
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
// queued in the kernel, until done is closed (the wait granted and let go
// of at once): so a process has at most one wait queued for one lock,
// however often its acquisitions give up. Acquisitions of this process
// that come meanwhile wait for the turn, or are told the lock is held.
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
	// A lock let go of, or handed over, was not lost: its watch ends
	// before its files change.
	l.stopWatch()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	if !l.left && t.handOver(l) {
		// Still held, by the next acquisition of this process in line.
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

// handOver gives l, held, to the next acquisition in line for its turn,
// when that one would hold it on l's terms, and reports whether it did: the
// releasing goroutine hands the lock on directly, and the lock's files and
// kernel locks stay as they are (docs/design.md, "Waiting"). The next in
// line is first come, first served: one on other terms is not passed over.
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

// taken reports whether an acquisition in this process holds or is
// attempting key.
func (t *turnTable) taken(key turnKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[key]
	return ok
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
