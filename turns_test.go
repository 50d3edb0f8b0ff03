package proclock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// queued reports how many acquisitions wait behind the holder of key.
func (t *turnTable) queued(key turnKey) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if q := t.m[key]; q != nil {
		return len(q.waiters)
	}
	return 0
}

// waitQueued yields until n acquisitions wait for key's turn.
func waitQueued(t *testing.T, key turnKey, n int) {
	t.Helper()
	for turns.queued(key) != n {
		runtime.Gosched()
	}
}

// Waiters of one process get the lock in the order they asked; one that
// gives up leaves the queue and the others keep their places.
func TestTurnsFirstComeFirstServed(t *testing.T) {
	w := fake.New()
	p := w.Spawn().Platform()
	const path = "/tmp/app.lock"
	ctx := context.Background()
	holder, err := Acquire(ctx, p, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target(p, path)
	if err != nil {
		t.Fatal(err)
	}

	order := make(chan int, 5)
	results := make([]chan error, 5)
	cancels := make([]context.CancelFunc, 5)
	for i := range 5 {
		wctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		results[i] = make(chan error, 1)
		go func() {
			l, err := Acquire(wctx, p, path, Options{Wait: true})
			if err == nil {
				order <- i
				err = l.Release()
			}
			results[i] <- err
		}()
		waitQueued(t, tg.key, i+1)
	}
	cancels[2]()
	if err := <-results[2]; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v; want an error matching context.Canceled", err)
	}
	waitQueued(t, tg.key, 4)
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{0, 1, 3, 4} {
		if got := <-order; got != want {
			t.Fatalf("waiter %d got the lock; want waiter %d", got, want)
		}
		if err := <-results[want]; err != nil {
			t.Fatalf("waiter %d: %v", want, err)
		}
	}
	for _, c := range cancels {
		c()
	}
	if turns.taken(tg.key) {
		t.Fatal("the turn is still taken after everyone left")
	}
}

// Without Wait, a lock held in this process is refused at once with this
// process's identity, and no file is touched.
func TestTurnsHeldHereRefusedWithoutTouchingFiles(t *testing.T) {
	w := fake.New()
	proc := w.Spawn()
	p := proc.Platform()
	const path = "/tmp/app.lock"
	ctx := context.Background()
	l, err := Acquire(ctx, p, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	touched := 0
	remove := w.Before("", path, func(fake.Event) error {
		touched++
		return nil
	})
	defer remove()
	_, err = Acquire(ctx, p, path, Options{})
	held, ok := errors.AsType[*HeldError](err)
	if !ok {
		t.Fatalf("second Acquire in one process = %v; want a *HeldError", err)
	}
	if held.Holder == nil || held.Holder.PID != proc.PID() {
		t.Fatalf("holder %v; want this process, pid %d", held.Holder, proc.PID())
	}
	if touched != 0 {
		t.Fatalf("the refused Acquire touched the lock file %d times", touched)
	}
}

// Release twice is harmless; the lock can be taken again after it.
func TestReleaseTwice(t *testing.T) {
	w := fake.New()
	p := w.Spawn().Platform()
	ctx := context.Background()
	l, err := Acquire(ctx, p, "/tmp/app.lock", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	l2, err := Acquire(ctx, p, "/tmp/app.lock", Options{})
	if err != nil {
		t.Fatalf("Acquire after a double release: %v", err)
	}
	l2.Release()
}

// Paths that name one file through a symlinked directory share turns.
func TestTurnsShareResolvedPath(t *testing.T) {
	w := fake.New()
	p := w.Spawn().Platform()
	if err := w.Mkdir("/tmp/real", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Symlink("/tmp/real", "/tmp/alias"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := Acquire(ctx, p, "/tmp/real/app.lock", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = Acquire(ctx, p, "/tmp/alias/app.lock", Options{})
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire through a symlinked directory = %v; want held", err)
	}
}

// A waiting acquisition in this process does not make the lock "held
// here": Inspect still names the other process that holds it.
func TestWaiterIsNotHolder(t *testing.T) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	const path = "/tmp/app.lock"
	ctx := context.Background()
	l, err := Acquire(ctx, a.Platform(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target(b.Platform(), path)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := Acquire(wctx, b.Platform(), path, Options{Wait: true})
		done <- err
	}()
	for !turns.taken(tg.key) {
		runtime.Gosched()
	}
	st, err := Inspect(ctx, b.Platform(), path)
	if err != nil || st.State != StateHeld || st.HeldHere || st.Holder == nil || st.Holder.PID != a.PID() {
		t.Fatalf("Inspect while waiting = %+v, %v; want held by pid %d, not here", st, err, a.PID())
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	l.Release()
}

// A wait that gives up behind a holder in this process says held, as one
// behind another process does.
func TestQueuedWaitGivingUpSaysHeld(t *testing.T) {
	w := fake.New()
	p := w.Spawn().Platform()
	const path = "/tmp/app.lock"
	l, err := Acquire(context.Background(), p, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	tg, err := target(p, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Acquire(ctx, p, path, Options{Wait: true})
		done <- err
	}()
	waitQueued(t, tg.key, 1)
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrHeld) {
		t.Fatalf("a queued wait given up = %v; want context.Canceled and ErrHeld", err)
	}
}

// One process taking one lock through both mechanisms (a platform with
// SQLite and the same platform without it) takes turns in memory: a second
// acquisition without Wait is refused at once whatever its mechanism, and
// waiters of both mechanisms get the lock in the order they asked, each
// holding it with its own mechanism, held for another process of either
// mechanism all the while (docs/protocol.md; docs/design.md, "Waiting").
func TestTurnsBothMechanismsInOrder(t *testing.T) {
	w := fake.New()
	proc, other := w.Spawn(), w.Spawn()
	sq := proc.Platform()
	file := sq.WithoutSQLite()
	plats := map[Mechanism]*platform.Platform{MechanismSQLite: sq, MechanismFile: file}
	const path = "/tmp/app.lock"
	ctx := guardCtxInternal(t)
	holder, err := Acquire(ctx, sq, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target(file, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(ctx, file, path, Options{}); !errors.Is(err, ErrHeld) {
		t.Fatalf("file-mechanism Acquire beside this process's SQLite holder = %v; want held", err)
	} else if he, ok := errors.AsType[*HeldError](err); !ok || he.Holder == nil || he.Holder.PID != proc.PID() {
		t.Fatalf("held error %v; want this process, pid %d, as the holder", err, proc.PID())
	}

	mechs := []Mechanism{MechanismFile, MechanismSQLite, MechanismFile, MechanismSQLite}
	type turn struct {
		i int
		l *Lock
	}
	order := make(chan turn, len(mechs))
	errs := make(chan error, len(mechs))
	for i, mech := range mechs {
		go func() {
			l, err := Acquire(ctx, plats[mech], path, Options{Wait: true, RemoveOnRelease: i == 2})
			if err != nil {
				errs <- fmt.Errorf("waiter %d (%s): %w", i, mech, err)
				return
			}
			order <- turn{i, l}
		}()
		for turns.queued(tg.key) != i+1 {
			if ctx.Err() != nil {
				t.Fatalf("waiter %d (%s) is not queued behind this process's holder", i, mech)
			}
			runtime.Gosched()
		}
	}
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	for want, mech := range mechs {
		var got turn
		select {
		case got = <-order:
		case err := <-errs:
			t.Fatal(err)
		}
		if got.i != want || got.l.Mechanism() != mech {
			t.Fatalf("waiter %d holds with %s; want waiter %d with %s", got.i, got.l.Mechanism(), want, mech)
		}
		for _, m := range []Mechanism{MechanismSQLite, MechanismFile} {
			op := other.Platform()
			if m == MechanismFile {
				op = op.WithoutSQLite()
			}
			if _, err := Acquire(ctx, op, path, Options{}); !errors.Is(err, ErrHeld) {
				t.Fatalf("another process (%s) while waiter %d (%s) holds: %v; want held", m, want, mech, err)
			} else if he, _ := errors.AsType[*HeldError](err); he.Holder == nil || he.Holder.PID != proc.PID() {
				t.Fatalf("another process (%s) while waiter %d holds: holder %v; want pid %d", m, want, he.Holder, proc.PID())
			}
		}
		if err := got.l.Release(); err != nil {
			t.Fatalf("waiter %d: Release: %v", want, err)
		}
	}
	if turns.taken(tg.key) {
		t.Fatal("the turn is still taken after everyone left")
	}
	for _, m := range []Mechanism{MechanismSQLite, MechanismFile} {
		l, err := Acquire(ctx, plats[m], path, Options{})
		if err != nil {
			t.Fatalf("%s: Acquire after every waiter let go: %v", m, err)
		}
		l.Release()
	}
}

// taken reports whether an acquisition in this process holds or is
// attempting key.
func (t *turnTable) taken(key turnKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[key]
	return ok
}
