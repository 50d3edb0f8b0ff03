package proclock

import (
	"context"
	"errors"
	"sync"
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
	waiters []chan struct{}
}

// errTurnTaken says another acquisition of this process holds or is
// attempting the lock, and the caller would not wait.
var errTurnTaken = errors.New("proclock: lock taken in this process")

// enter takes key's turn: at once when it is free, else, when wait is set,
// after every acquisition queued before it has left, or not at all when
// ctx ends first (returning ctx.Err()).
func (t *turnTable) enter(ctx context.Context, key turnKey, wait bool) error {
	t.mu.Lock()
	q, taken := t.m[key]
	if !taken {
		t.m[key] = &turnQueue{}
		t.mu.Unlock()
		return nil
	}
	if !wait {
		t.mu.Unlock()
		return errTurnTaken
	}
	ready := make(chan struct{})
	q.waiters = append(q.waiters, ready)
	t.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, w := range q.waiters {
		if w == ready {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return ctx.Err()
		}
	}
	// The turn was handed over just as ctx ended: pass it on.
	t.passLocked(key)
	return ctx.Err()
}

// leave gives key's turn to the next in line, or frees it.
func (t *turnTable) leave(key turnKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.passLocked(key)
}

func (t *turnTable) passLocked(key turnKey) {
	q := t.m[key]
	q.holder = nil
	if len(q.waiters) == 0 {
		delete(t.m, key)
		return
	}
	next := q.waiters[0]
	q.waiters = q.waiters[1:]
	close(next)
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

// held reports whether an acquisition in this process holds key.
func (t *turnTable) held(key turnKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	q, ok := t.m[key]
	return ok && q.holder != nil
}
