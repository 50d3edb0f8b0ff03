package proclock

import (
	"context"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// pidRecorder is a platform's Waker that remembers the pid each Wait
// watched, last, and whether that Wait was one between attempts (not one
// of a first attempt's busy ticks and retries). While gate is set, a Wait
// begins only once it is closed.
type pidRecorder struct {
	inner   platform.Waker
	mu      sync.Mutex
	last    int
	between bool
	waits   int
	gate    chan struct{}
}

func (r *pidRecorder) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	between := betweenAttempts()
	r.mu.Lock()
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	r.mu.Lock()
	r.last, r.between, r.waits = pid, between, r.waits+1
	r.mu.Unlock()
	return r.inner.Wait(ctx, dir, names, pid, d)
}

// betweenAttempts reports whether the Wait that calls it was called by
// attemptUntil itself (a wait between attempts, or a herd's moment), not
// from within an attempt: the first frame of the calling stack that is
// attemptUntil's, or the mechanisms', says which.
func betweenAttempts() bool {
	until := runtime.FuncForPC(reflect.ValueOf(attemptUntil).Pointer()).Name()
	mod := strings.TrimSuffix(until, ".attemptUntil")
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		switch {
		case f.Function == until || strings.HasPrefix(f.Function, until+"."):
			return true
		case strings.HasPrefix(f.Function, mod+"/sqlitelock."), strings.HasPrefix(f.Function, mod+"/stamplock."):
			return false
		}
		if !more {
			return false
		}
	}
}

func (r *pidRecorder) watching() (pid, waits int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.waits
}

// pastFirst reports whether the last Wait was one between attempts: the
// waiter's first attempt is over.
func (r *pidRecorder) pastFirst() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.between
}

// Three waiters of other processes, SQLite's, all wake when the holder
// lets go. The first time, each attempts, and the two that lose wait on
// the winner. Having lost so, they are a herd: when the winner lets go,
// each waits its own moment first (herdDelay, chosen here), the first to
// look takes the lock, and the other finds it holding and waits on it
// without attempting: no SQLite lock call at all. The file mechanism's
// attempt is not told apart from its look by the fake world's hooks; its
// waiters take the same path.
func TestHerdWaitsOnWhoWentFirstFake(t *testing.T) {
	w := fake.New()
	holder := w.Spawn()
	procs := []*fake.Process{w.Spawn(), w.Spawn(), w.Spawn()}
	plats := make([]*platform.Platform, len(procs))
	recs := make([]*pidRecorder, len(procs))
	for i, proc := range procs {
		plats[i] = proc.Platform()
		recs[i] = &pidRecorder{inner: plats[i].Wake}
		plats[i].Wake = recs[i]
	}
	const path = "/tmp/app.lock"
	ctx := guardCtxInternal(t)
	first, err := Acquire(ctx, holder.Platform(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	delays := map[platform.Process]time.Duration{}
	locks := map[int]int{} // SQLite lock calls on the lock, by pid
	old := herdDelay
	herdDelay = func(p *platform.Platform) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return delays[p.Process]
	}
	defer func() { herdDelay = old }()
	defer w.Hook(fake.OpLock, path, fake.Before, func(ev fake.Event) error {
		mu.Lock()
		locks[ev.PID]++
		mu.Unlock()
		return nil
	})()

	w.Freeze()
	defer w.Thaw()
	type win struct {
		i int
		l *Lock
	}
	got := make(chan win, len(procs))
	// The waiters end before herdDelay is put back (-race saw one read it
	// as the test ended).
	var waiters sync.WaitGroup
	defer waiters.Wait()
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := func(i int) {
		waiters.Go(func() {
			l, err := Acquire(waitCtx, plats[i], path, Options{Wait: true})
			if err == nil {
				got <- win{i, l}
			}
		})
	}
	// drive moves time on in steps until cond holds.
	drive := func(what string, step time.Duration, cond func() bool) {
		t.Helper()
		for !cond() {
			if err := w.WaitSleepers(ctx, 1); err != nil {
				for i := range recs {
					pid, n := recs[i].watching()
					t.Logf("waiter %d (pid %d): last wait on %d, %d waits", i, procs[i].PID(), pid, n)
				}
				t.Fatalf("%s: nobody sleeps: %v", what, err)
			}
			w.Advance(step)
		}
	}
	// settled is whether every waiter in idx sleeps in a wait on pid,
	// between attempts. Past their first attempts: a first attempt's busy
	// ticks and short retries pause watching the holder as well
	// (sqlitelock.BusyTimeout, then 3 retries 5-25 ms apart), and a
	// waiter still in them when the holder lets go, should it lose, is no
	// herd's: it attempts at the next release, without the herd's path
	// this test is about. The clock does not tell: it moves for all, and
	// a goroutine that lags (under -race, on a loaded machine) starts its
	// first attempt when the others have taken it past any bound. So the
	// waits are told apart by who calls them (betweenAttempts).
	settled := func(pid int, idx ...int) bool {
		for _, i := range idx {
			if last, _ := recs[i].watching(); last != pid || !recs[i].pastFirst() {
				return false
			}
		}
		return w.Sleepers() == len(idx)
	}
	// Waiter 2 lags, as such a goroutine does: it starts once the others
	// have settled, and the clock has gone on past their first attempts.
	start(0)
	start(1)
	drive("settling", 30*time.Millisecond, func() bool { return settled(holder.PID(), 0, 1) })
	start(2)
	if err := w.WaitSleepers(ctx, 3); err != nil { // in its first attempt
		t.Fatal(err)
	}
	drive("settling", 30*time.Millisecond, func() bool { return settled(holder.PID(), 0, 1, 2) })

	// The first release: all attempt; one wins.
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	var winner win
	drive("the first release", 100*time.Microsecond, func() bool {
		select {
		case winner = <-got:
		default:
		}
		return winner.l != nil
	})
	var losers []int
	for i := range procs {
		if i != winner.i {
			losers = append(losers, i)
		}
	}
	drive("the losers settling", 100*time.Microsecond, func() bool { return settled(procs[winner.i].PID(), losers...) })
	mu.Lock()
	for _, i := range losers {
		if locks[procs[i].PID()] == 0 {
			t.Errorf("waiter %d did not attempt after the first release", i)
		}
	}
	early, late := losers[0], losers[1]
	delays[plats[early].Process] = 100 * time.Microsecond
	delays[plats[late].Process] = time.Millisecond
	clear(locks)
	mu.Unlock()

	// The second release: the herd staggers, each in a wait of its own
	// moment (on no pid), which time moves through one at a time.
	_, earlyWaits := recs[early].watching()
	_, lateWaits := recs[late].watching()
	// The release is two steps (the mark removed, then SQLite's lock let
	// go), and a wait that begins between them ends at the second
	// (docs/testing.md, "Time"): the losers' next waits begin once the
	// release is over, so that their moments are the clock's alone.
	gate := make(chan struct{})
	for _, i := range losers {
		recs[i].mu.Lock()
		recs[i].gate = gate
		recs[i].mu.Unlock()
	}
	err = winner.l.Release()
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				for i := range recs {
					pid, n := recs[i].watching()
					t.Logf("waiter %d (pid %d): last wait on %d, %d waits", i, procs[i].PID(), pid, n)
				}
				t.Fatalf("%s: never (early %d, late %d, %d sleepers)", what, early, late, w.Sleepers())
			}
			runtime.Gosched()
		}
	}
	staggering := func(i, before int) bool {
		last, n := recs[i].watching()
		return n > before && last == 0
	}
	until("the herd staggering", func() bool {
		return staggering(early, earlyWaits) && staggering(late, lateWaits) && w.Sleepers() == 2
	})
	w.Advance(100 * time.Microsecond)
	var second win
	select {
	case second = <-got:
	case <-ctx.Done():
		t.Fatal("the early waiter did not take the lock once its moment came")
	}
	defer second.l.Release()
	if second.i != early {
		t.Fatalf("waiter %d took the lock; want %d, whose moment came first", second.i, early)
	}
	until("the late waiter still staggering", func() bool { return w.Sleepers() == 1 })
	_, lateWaits = recs[late].watching()
	w.Advance(900 * time.Microsecond)
	until("the late waiter waiting on the early one", func() bool {
		last, n := recs[late].watching()
		return n > lateWaits && last == procs[early].PID() && w.Sleepers() == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if n := locks[procs[late].PID()]; n != 0 {
		t.Errorf("the late waiter made %d SQLite lock calls after the second release; want none: it found the lock held", n)
	}
}

// A waiter that loses inside its first attempt is one of a herd too, but
// is not taken for one. Waiter x is in its first attempt (SQLite's busy
// wait) when the holder lets go; the other waiter, y, waiting between
// attempts, takes the lock (x's lock calls are held back until it has),
// and x's first attempt ends naming y. When y lets go, x should wait its
// herd's moment before it attempts (herdDelay); it attempts at once,
// since attemptUntil marks a herd only from a loss after a wait of its
// own (it knows no holder before its first attempt). A cost of CPU, not of
// safety, and off linux only (there the queue wakes one head); not fixed
// (review2's report): run with PROCLOCK_QUEUE_FINDINGS=1 to see it fail.
func TestHerdLosingInFirstAttemptFake(t *testing.T) {
	if os.Getenv("PROCLOCK_QUEUE_FINDINGS") == "" {
		t.Skip("a known gap, not fixed: a loss inside the first attempt marks no herd (PROCLOCK_QUEUE_FINDINGS=1 runs it)")
	}
	w := fake.New()
	holder := w.Spawn()
	x, y := w.Spawn(), w.Spawn()
	px, py := x.Platform(), y.Platform()
	rx, ry := &pidRecorder{inner: px.Wake}, &pidRecorder{inner: py.Wake}
	px.Wake, py.Wake = rx, ry
	const path = "/tmp/app.lock"
	ctx := guardCtxInternal(t)
	first, err := Acquire(ctx, holder.Platform(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var staggered atomic.Int64 // herd moments x waited
	old := herdDelay
	herdDelay = func(p *platform.Platform) time.Duration {
		if p.Process == px.Process {
			staggered.Add(1)
		}
		return 100 * time.Microsecond
	}
	defer func() { herdDelay = old }()
	w.Freeze()
	defer w.Thaw()
	type win struct {
		who string
		l   *Lock
	}
	got := make(chan win, 2)
	var waiters sync.WaitGroup
	defer waiters.Wait()
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := func(who string, p *platform.Platform) {
		waiters.Go(func() {
			if l, err := Acquire(waitCtx, p, path, Options{Wait: true}); err == nil {
				got <- win{who, l}
			}
		})
	}
	drive := func(what string, step time.Duration, cond func() bool) {
		t.Helper()
		for !cond() {
			if err := w.WaitSleepers(ctx, 1); err != nil {
				t.Fatalf("%s: nobody sleeps: %v", what, err)
			}
			w.Advance(step)
		}
	}
	settled := func(r *pidRecorder, pid int) bool {
		last, _ := r.watching()
		return last == pid && r.pastFirst() && w.Sleepers() == 1
	}
	start("y", py)
	drive("y settling", 30*time.Millisecond, func() bool { return settled(ry, holder.PID()) })
	start("x", px)
	if err := w.WaitSleepers(ctx, 2); err != nil { // x in its first attempt's busy wait
		t.Fatal(err)
	}
	if rx.pastFirst() {
		t.Fatal("x is past its first attempt already")
	}
	yHeld := make(chan struct{})
	defer w.Hook(fake.OpLock, path, fake.Before, func(ev fake.Event) error {
		if ev.PID == x.PID() {
			select {
			case <-yHeld:
			case <-waitCtx.Done():
			}
		}
		return nil
	})()
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	// winner moves time on while anyone sleeps until a waiter holds.
	winner := func(what string) win {
		t.Helper()
		for {
			select {
			case won := <-got:
				return won
			case <-ctx.Done():
				t.Fatalf("%s: never", what)
			default:
			}
			if w.Sleepers() > 0 {
				w.Advance(100 * time.Microsecond)
			} else {
				runtime.Gosched()
			}
		}
	}
	wy := winner("y taking the lock")
	if wy.who != "y" {
		t.Fatalf("%s took the lock; want y (x's lock calls were held back)", wy.who)
	}
	close(yHeld)
	drive("x settling on y", time.Millisecond, func() bool { return settled(rx, y.PID()) })
	if err := wy.l.Release(); err != nil {
		t.Fatal(err)
	}
	wx := winner("x taking the lock")
	defer wx.l.Release()
	if n := staggered.Load(); n == 0 {
		t.Error("x, having lost inside its first attempt, attempted at y's release without waiting a herd's moment")
	}
}
