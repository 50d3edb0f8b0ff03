package proclock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/platform"
)

// wakeRecorder is a platform's Waker that says when a waiting Acquire
// pauses between attempts, and records why each pause ended.
type wakeRecorder struct {
	inner   platform.Waker
	pausing chan struct{}
	woke    chan struct{} // told when a pause ends

	mu  sync.Mutex
	got []platform.Wakeup
}

func recordWakes(p *platform.Platform) *wakeRecorder {
	r := &wakeRecorder{inner: p.Wake, pausing: make(chan struct{}, 1), woke: make(chan struct{}, 1)}
	p.Wake = r
	return r
}

func (r *wakeRecorder) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	select {
	case r.pausing <- struct{}{}:
	default:
	}
	why, err := r.inner.Wait(ctx, dir, names, pid, d)
	if err == nil {
		r.mu.Lock()
		r.got = append(r.got, why)
		r.mu.Unlock()
	}
	select {
	case r.woke <- struct{}{}:
	default:
	}
	return why, err
}

// count returns how many pauses ended for why.
func (r *wakeRecorder) count(why platform.Wakeup) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, g := range r.got {
		if g == why {
			n++
		}
	}
	return n
}

// guardCtx bounds a wait of the test's on something that should happen at
// once: a failing test ends, with a message, instead of hanging.
func guardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wakePath is p's platform with the SQLite mechanism's SQL path (darwin's,
// windows', the BSDs'), whose waits go through the wake-up source: the
// byte-range path waits in the (fake) kernel's queue instead
// (docs/design.md, "Waiting").
func wakePath(p *fake.Process) *platform.Platform {
	pp := p.Platform()
	pp.SQLite = fakesql.SQLPlatform(p).SQLite
	return pp
}

// driveToPause moves a frozen world's time on until each of the waiters
// has made its first attempt (whose busy timeout and retries sleep on the
// clock) and is blocked in a pause between attempts.
func driveToPause(t *testing.T, w *fake.World, waiters ...*wakeRecorder) {
	t.Helper()
	ctx := guardCtx(t)
	paused := make([]bool, len(waiters))
	for {
		if err := w.WaitSleepers(ctx, len(waiters)); err != nil {
			t.Fatalf("the waiters never all slept: %v", err)
		}
		all := true
		for i, r := range waiters {
			select {
			case <-r.pausing:
				paused[i] = true
			default:
			}
			all = all && paused[i]
		}
		if all {
			return
		}
		w.Advance(30 * time.Millisecond)
	}
}

// In a frozen fake world, a waiting Acquire deep in its back-off takes the
// lock as soon as its holder lets go or dies: its pause is woken by the
// change of the lock's files or by the holder's death, not ended by its
// back-off (which would need Advance). At most one short pause is left: a
// SQLite holder removes .holder a moment before it lets go, and a waiter
// woken then may find it still holding; it looks again after 1 ms.
func TestWaitWokenFake(t *testing.T) {
	const woken = time.Millisecond // the pause after a wake-up, at most
	events := []struct {
		name string
		opts proclock.Options
		end  func(t *testing.T, holder *fake.Process, l *proclock.Lock)
		want platform.Wakeup
	}{
		{"release", proclock.Options{}, func(t *testing.T, _ *fake.Process, l *proclock.Lock) {
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		}, platform.WakeChange},
		{"release and remove", proclock.Options{RemoveOnRelease: true}, func(t *testing.T, _ *fake.Process, l *proclock.Lock) {
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		}, platform.WakeChange},
		{"holder killed", proclock.Options{}, func(_ *testing.T, holder *fake.Process, _ *proclock.Lock) {
			holder.Kill()
		}, platform.WakeExit},
	}
	for _, mech := range mechanisms {
		for _, ev := range events {
			t.Run(string(mech)+"/"+ev.name, func(t *testing.T) {
				w := fake.New()
				holder, waiter := w.Spawn(), w.Spawn()
				hp, wp := holder.Platform(), wakePath(waiter)
				if mech == proclock.MechanismFile {
					hp, wp = hp.WithoutSQLite(), wp.WithoutSQLite()
				}
				const path = "/tmp/app.lock"
				l, err := proclock.Acquire(context.Background(), hp, path, ev.opts)
				if err != nil {
					t.Fatal(err)
				}
				rec := recordWakes(wp)
				w.Freeze()
				res := waitAndRelease(wp, path)
				driveToPause(t, w, rec)
				for range 5 { // deep into the back-off: pauses of 50–100 ms
					w.Advance(100 * time.Millisecond)
					driveToPause(t, w, rec)
				}
				start := w.Now()
				drainWoke(rec)

				ev.end(t, holder, l)
				// The pause ends, with no time passing; a holder's death
				// ends it in the waiter's goroutine, so wait for that.
				select {
				case err := <-res:
					res <- err
				case <-rec.woke:
				case <-guardCtx(t).Done():
					t.Fatal("the waiter was not woken: it still waits for its back-off")
				}
				for {
					err, done := resultOrSleep(t, w, res)
					if done {
						if err != nil {
							t.Fatalf("waiter: %v", err)
						}
						break
					}
					if w.Now().Sub(start) >= woken {
						t.Fatalf("the waiter still waits %v after the holder let go: not woken", w.Now().Sub(start))
					}
					w.Advance(woken)
				}
				if n := rec.count(ev.want); n == 0 {
					t.Errorf("no pause woken by %v", ev.want)
				}
			})
		}
	}
}

// In a frozen fake world, a waiting Acquire takes the lock as soon as its
// holder dies or lets go, wherever in its wait it is, for both mechanisms
// alike, with no time passing: in its first attempt (SQLite's busy wait,
// then its retries) as between attempts. Before, a SQLite waiter inside
// its first attempt slept on until the clock moved (docs/testing.md,
// "Time").
func TestFrozenWaitEndsAtOnceFake(t *testing.T) {
	for _, mech := range mechanisms {
		for _, advances := range []int{0, 1, 2, 5} { // 0, 1, 2: inside SQLite's first attempt
			for _, end := range []string{"killed", "released"} {
				t.Run(fmt.Sprintf("%s/%d/%s", mech, advances, end), func(t *testing.T) {
					f := startFrozenWaiter(t, mech, nil)
					for i := 0; ; i++ {
						if err := f.w.WaitSleepers(f.ctx, 1); err != nil {
							t.Fatal(err)
						}
						if i == advances {
							break
						}
						f.w.Advance(100 * time.Millisecond)
					}
					start := f.w.Now()
					if err := f.letGo(end); err != nil {
						t.Fatal(err)
					}
					f.taken(t, start, "it waits for time to move")
				})
			}
		}
	}
}

// waitAndRelease starts an Acquire with Wait of path on p, which
// releases what it takes; the channel gets its end (buffered: a test
// may put what it read back).
func waitAndRelease(p *platform.Platform, path string) chan error {
	res := make(chan error, 1)
	go func() {
		got, err := proclock.Acquire(context.Background(), p, path, proclock.Options{Wait: true})
		if err == nil {
			err = got.Release()
		}
		res <- err
	}()
	return res
}

// frozenWaiter is the staging of the frozen-wait tests: a holder of the
// lock, the world's clock frozen, and a waiter's Acquire with Wait
// running (its end on res).
type frozenWaiter struct {
	w      *fake.World
	holder *fake.Process
	l      *proclock.Lock
	res    chan error
	ctx    context.Context
}

// startFrozenWaiter stages a frozenWaiter on mech; wake, when not nil,
// wraps the waiter's Waker.
func startFrozenWaiter(t *testing.T, mech proclock.Mechanism, wake func(platform.Waker) platform.Waker) *frozenWaiter {
	t.Helper()
	w := fake.New()
	holder, waiter := w.Spawn(), w.Spawn()
	hp, wp := holder.Platform(), wakePath(waiter)
	if mech == proclock.MechanismFile {
		hp, wp = hp.WithoutSQLite(), wp.WithoutSQLite()
	}
	if wake != nil {
		wp.Wake = wake(wp.Wake)
	}
	const path = "/tmp/app.lock"
	l, err := proclock.Acquire(context.Background(), hp, path, proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Freeze()
	res := waitAndRelease(wp, path)
	return &frozenWaiter{w: w, holder: holder, l: l, res: res, ctx: guardCtx(t)}
}

// letGo ends the holder's hold: "killed" kills it, else it releases.
func (f *frozenWaiter) letGo(end string) error {
	if end == "killed" {
		f.holder.Kill()
		return nil
	}
	return f.l.Release()
}

// taken fails t unless the waiter takes the lock (and releases it) with
// the clock where it was at start; why says what a waiter still waiting
// waits for.
func (f *frozenWaiter) taken(t *testing.T, start time.Time, why string) {
	t.Helper()
	select {
	case err := <-f.res:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-f.ctx.Done():
		t.Fatalf("the waiter still waits on the frozen clock: %s", why)
	}
	if moved := f.w.Now().Sub(start); moved != 0 {
		t.Errorf("the clock moved %v", moved)
	}
}

// beforeWait is a platform's Waker, keeping its watch, that runs a
// function of the test's at the start of the next Wait, once: between the
// waiter's last look at the lock (its try, or its attempt) and its wait.
type beforeWait struct {
	inner platform.Waker
	mu    sync.Mutex
	fn    func()
}

func (b *beforeWait) arm(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fn = fn
}

func (b *beforeWait) run() {
	b.mu.Lock()
	fn := b.fn
	b.fn = nil
	b.mu.Unlock()
	if fn != nil {
		fn()
	}
}

func (b *beforeWait) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	b.run()
	return b.inner.Wait(ctx, dir, names, pid, d)
}

func (b *beforeWait) Watch(dir string, names []string) (wake.Watch, error) {
	w, err := b.inner.(wake.Watcher).Watch(dir, names)
	if err != nil {
		return nil, err
	}
	return beforeWatch{w, b}, nil
}

type beforeWatch struct {
	wake.Watch
	b *beforeWait
}

func (w beforeWatch) Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error) {
	w.b.run()
	return w.Watch.Wait(ctx, pid, d)
}

// TestFrozenWaitLetGoBeforeItBeginsFake: the holder lets go (or is
// killed) after the waiter's last look found it holding and before the
// waiter's wait begins, so that the wait starts with nothing left to see
// go: no mark, and nobody locking the file. It ends at once all the same,
// wherever the waiter is (SQLite's busy wait, its retries, between
// attempts; the file mechanism between attempts), as the waiter's next
// try natively would find the lock free; on a frozen clock that try would
// never come. A SQLite holder's release in two steps makes this schedule
// come by itself: its mark's removal wakes the waiter, whose try may find
// SQLite's lock still held and whose next wait may begin after the holder
// let go of it (seen under wine in TestFrozenWaitEndsAtOnceFake, 2 runs in
// 4 of the package). The kept watch (wake.Watcher), set up before the
// waiter's tries, sees the change.
func TestFrozenWaitLetGoBeforeItBeginsFake(t *testing.T) {
	for _, mech := range mechanisms {
		for _, advances := range []int{0, 1, 2, 5} { // 0, 1, 2: inside SQLite's first attempt
			for _, end := range []string{"killed", "released"} {
				t.Run(fmt.Sprintf("%s/%d/%s", mech, advances, end), func(t *testing.T) {
					var armed *beforeWait
					f := startFrozenWaiter(t, mech, func(inner platform.Waker) platform.Waker {
						armed = &beforeWait{inner: inner}
						return armed
					})
					// The holder goes at the start of the waiter's next
					// wait after the last advance: the waiter, awake,
					// looks (and finds the lock held), then waits. It is
					// armed while the waiter sleeps, before the advance
					// that wakes it: armed after, the waiter could be in
					// its next wait already, and the holder never go.
					letGo := make(chan error, 1)
					for i := 0; ; i++ {
						if asleep(t, f, letGo) {
							break
						}
						if i == advances {
							armed.arm(func() { letGo <- f.letGo(end) })
						}
						// A wait on a kept watch of a live holder is long
						// (up to a second): advance until the next begins.
						f.w.Advance(100 * time.Millisecond)
					}
					f.taken(t, f.w.Now(), "its wait began after its holder let go")
				})
			}
		}
	}
}

// asleep waits until the waiter sleeps on the frozen clock, reporting
// false, or until the holder has let go, reporting true.
func asleep(t *testing.T, f *frozenWaiter, letGo chan error) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	slept := make(chan error, 1)
	go func() { slept <- f.w.WaitSleepers(ctx, 1) }()
	select {
	case err := <-letGo:
		if err != nil {
			t.Fatal(err)
		}
		return true
	case err := <-slept:
		if err != nil {
			t.Fatalf("the waiter never began another wait: %v", err)
		}
		return false
	}
}

// TestFrozenWaitReleaseInTwoStepsFake: a SQLite holder removes its mark,
// which wakes the waiter, a moment before it lets go of SQLite's lock; a
// waiter whose try falls in between finds the lock still taken and pauses
// again. On a frozen clock that pause ends when the lock is let go, as the
// waiter's next try would find it natively (docs/testing.md, "Time").
func TestFrozenWaitReleaseInTwoStepsFake(t *testing.T) {
	w := fake.New()
	holder, waiter := w.Spawn(), w.Spawn()
	const path = "/tmp/app.lock"
	l, err := proclock.Acquire(context.Background(), holder.Platform(), path, proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wp := wakePath(waiter)
	rec := recordWakes(wp)
	w.Freeze()
	res := waitAndRelease(wp, path)
	driveToPause(t, w, rec)
	ctx := guardCtx(t)
	// The holder's pin, closed after its mark is gone, lets go of the
	// lock: hold it back until the woken waiter pauses again.
	var markGone bool
	w.After("remove", path+".holder", func(ev fake.Event) error {
		if ev.PID == holder.PID() {
			markGone = true
			drainWoke(rec)
			select {
			case <-rec.pausing:
			default:
			}
		}
		return nil
	})
	w.Before("close", path, func(ev fake.Event) error {
		if ev.PID == holder.PID() && markGone {
			markGone = false
			select {
			case <-rec.pausing: // woken, it tried, and pauses again
			case <-ctx.Done():
			}
			if err := w.WaitSleepers(ctx, 1); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	start := w.Now()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiter still waits on the frozen clock: it waits for time to move")
	}
	if moved := w.Now().Sub(start); moved != 0 {
		t.Errorf("the clock moved %v", moved)
	}
}

func drainWoke(r *wakeRecorder) {
	select {
	case <-r.woke:
	default:
	}
}

// resultOrSleep returns the waiter's result when it comes, or done false
// when instead the waiter sleeps on the frozen clock.
func resultOrSleep(t *testing.T, w *fake.World, res <-chan error) (err error, done bool) {
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	slept := make(chan error, 1)
	go func() { slept <- w.WaitSleepers(ctx, 1) }()
	select {
	case err := <-res:
		return err, true
	case err := <-slept:
		if err != nil {
			t.Fatalf("the waiter neither took the lock nor slept: %v", err)
		}
		return nil, false
	}
}

// Waiters do not wake each other: the files they open, read and close on
// each attempt are not a change. Two waiters of a held lock, over ten
// rounds of their longest back-off, are woken by their time alone.
func TestWaitersDoNotWakeEachOtherFake(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			w := fake.New()
			hp := w.Spawn().Platform()
			ap, bp := wakePath(w.Spawn()), wakePath(w.Spawn())
			if mech == proclock.MechanismFile {
				hp, ap, bp = hp.WithoutSQLite(), ap.WithoutSQLite(), bp.WithoutSQLite()
			}
			const path = "/tmp/app.lock"
			l, err := proclock.Acquire(context.Background(), hp, path, proclock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			a, b := recordWakes(ap), recordWakes(bp)
			w.Freeze()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for _, p := range []*platform.Platform{ap, bp} {
				wg.Go(func() {
					if got, err := proclock.Acquire(ctx, p, path, proclock.Options{Wait: true}); err == nil {
						got.Release()
						t.Error("a waiter took a held lock")
					}
				})
			}
			driveToPause(t, w, a, b)
			for range 10 {
				w.Advance(100 * time.Millisecond)
				driveToPause(t, w, a, b)
			}
			cancel()
			wg.Wait()
			for i, r := range []*wakeRecorder{a, b} {
				if n := r.count(platform.WakeChange); n != 0 {
					t.Errorf("waiter %d woken %d times by a change; want 0", i, n)
				}
				if n := r.count(platform.WakeTimeout); n < 10 {
					t.Errorf("waiter %d woken %d times by its time; want 10 at least", i, n)
				}
			}
		})
	}
}
