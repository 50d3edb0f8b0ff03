package proclock

import (
	"context"
	"errors"
	"io/fs"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// handoffPlatform is a fake process's platform for the mechanism.
func handoffPlatform(proc *fake.Process, mech Mechanism) *platform.Platform {
	p := proc.Platform()
	if mech == MechanismFile {
		p.SQLite = nil
	}
	return p
}

// guardCtxInternal bounds a wait of the test's on something that should
// happen at once: a failing test ends instead of hanging.
func guardCtxInternal(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// countOps counts the operations processes make on the world's files from
// now on, until the returned stop.
func countOps(w *fake.World) (n *atomic.Int64, stop func()) {
	n = new(atomic.Int64)
	return n, w.Before("", "", func(ev fake.Event) error {
		if ev.PID != 0 {
			n.Add(1)
		}
		return nil
	})
}

// handOff has p take the lock at path, queues an acquisition through p
// with opts behind it, and releases the first: it returns both locks, and
// how many operations processes made on files from the release to the
// waiter holding.
func handOff(t *testing.T, w *fake.World, p *platform.Platform, path string, opts Options) (first, second *Lock, ops int64) {
	t.Helper()
	ctx := guardCtxInternal(t)
	first, err := Acquire(ctx, p, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target(p, path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lock, 1)
	go func() {
		opts.Wait = true
		l, err := Acquire(ctx, p, path, opts)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitQueued(t, tg.key, 1)
	n, stop := countOps(w)
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second = <-got
	stop()
	if second == nil {
		t.FailNow()
	}
	return first, second, n.Load()
}

// A Release with an acquisition of this process waiting on the same terms
// hands it the lock still held: no file is touched, the lock never looks
// free to another process, and the first holder's later Release does
// nothing. The new holder's Release lets go.
func TestHandOverInProcess(t *testing.T) {
	for _, mech := range []Mechanism{MechanismSQLite, MechanismFile} {
		t.Run(string(mech), func(t *testing.T) {
			w := fake.New()
			a, b := w.Spawn(), w.Spawn()
			p := handoffPlatform(a, mech)
			const path = "/tmp/app.lock"
			ctx := guardCtxInternal(t)
			first, second, n := handOff(t, w, p, path, Options{})
			if n != 0 {
				t.Errorf("the handoff made %d operations on files; want none", n)
			}
			tg, err := target(p, path)
			if err != nil {
				t.Fatal(err)
			}
			if second.Mechanism() != mech || second.Holder() == nil || second.Holder().PID != a.PID() {
				t.Errorf("handed lock: %s, holder %v; want %s, pid %d", second.Mechanism(), second.Holder(), mech, a.PID())
			}
			if err := first.Release(); err != nil {
				t.Errorf("first holder's second Release: %v", err)
			}
			if held, err := IsHeld(ctx, handoffPlatform(b, mech), path); err != nil || !held {
				t.Errorf("IsHeld from another process after the handoff = %v, %v; want held", held, err)
			}
			if !turns.held(tg.key) {
				t.Error("not held here after the handoff")
			}
			if err := second.Release(); err != nil {
				t.Fatal(err)
			}
			l, err := Acquire(ctx, handoffPlatform(b, mech), path, Options{})
			if err != nil {
				t.Fatalf("another process's Acquire after the last Release: %v", err)
			}
			l.Release()
			if turns.taken(tg.key) {
				t.Error("the turn is still taken after everyone left")
			}
		})
	}
}

// A waiter on other terms (here: removing the file on release) is not
// handed the held lock: the holder lets go, and the waiter takes the lock
// anew, on its own terms.
func TestHandOverOnlyOnSameTerms(t *testing.T) {
	w := fake.New()
	p := w.Spawn().Platform()
	const path = "/tmp/app.lock"
	first, second, n := handOff(t, w, p, path, Options{RemoveOnRelease: true})
	if n == 0 {
		t.Error("the waiter on other terms was handed the held lock")
	}
	if err := first.Release(); err != nil {
		t.Errorf("first holder's second Release: %v", err)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.FS().Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file after a RemoveOnRelease holder let go: %v; want it gone", err)
	}
}

// A waiter handed the lock just as its ctx ends hands it on to the next in
// line, still held; the mechanism lets go only once, at the last Release.
// The turn table's gaveUp hook places the handoff between the waiter's ctx
// ending and its leaving the queue.
func TestHandOverAsWaiterGivesUp(t *testing.T) {
	tt := &turnTable{m: map[turnKey]*turnQueue{}}
	key := turnKey{base: "app.lock"}
	terms := handoffTerms{ok: true}
	var lets atomic.Int64
	ctx := context.Background()
	if _, err := tt.enter(ctx, key, false, "app.lock", terms); err != nil {
		t.Fatal(err)
	}
	holder := &Lock{path: "app.lock", key: key, terms: terms, release: func() error { lets.Add(1); return nil }}
	tt.hold(key, holder)

	giving, handed := make(chan struct{}), make(chan struct{})
	tt.gaveUp = func() {
		close(giving)
		<-handed
	}
	ctx1, cancel1 := context.WithCancel(ctx)
	res1 := make(chan error, 1)
	go func() {
		l, err := tt.enter(ctx1, key, true, "one", terms)
		if l != nil {
			err = errors.New("the waiter that gave up returned the lock")
		}
		res1 <- err
	}()
	for tt.queued(key) != 1 {
		runtime.Gosched()
	}
	res2 := make(chan *Lock, 1)
	go func() {
		l, err := tt.enter(ctx, key, true, "two", terms)
		if err != nil {
			t.Error(err)
		}
		res2 <- l
	}()
	for tt.queued(key) != 2 {
		runtime.Gosched()
	}
	cancel1()
	<-giving
	if err := tt.release(holder); err != nil {
		t.Fatal(err)
	}
	close(handed)
	if err := <-res1; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter that gave up: %v; want context.Canceled", err)
	}
	second := <-res2
	if second == nil || second.path != "two" {
		t.Fatalf("next waiter got %+v; want the lock handed on, named as it asked", second)
	}
	if n := lets.Load(); n != 0 {
		t.Fatalf("the mechanism let go %d times before the last Release", n)
	}
	if err := tt.release(second); err != nil {
		t.Fatal(err)
	}
	if n := lets.Load(); n != 1 {
		t.Errorf("the mechanism let go %d times; want once", n)
	}
	if _, taken := tt.m[key]; taken {
		t.Error("the turn is still taken after everyone left")
	}
}
