package fake_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

const (
	bellDir  = "/tmp"
	bellName = "app.lock.bell"
)

var bellNames = []string{"app.lock", "app.lock.holder"}

// queueOf joins the queue of the lock in bellDir as p.
func queueOf(t *testing.T, p *fake.Process) platform.Watch {
	t.Helper()
	q, ok := p.QueueWake().(platform.Queuer)
	if !ok {
		t.Fatal("QueueWake has no queue")
	}
	w, err := q.Queue(bellDir, bellNames, bellName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// place is w's Place.
func place(t *testing.T, w platform.Watch) (led, behind bool) {
	t.Helper()
	p, ok := w.(platform.Placer)
	if !ok {
		t.Fatalf("%T tells no place", w)
	}
	return p.Place()
}

type waited struct {
	i   int
	why platform.Wakeup
	err error
}

// waitAll starts a Wait of each of ws, reporting on the channel.
func waitAll(ctx context.Context, d time.Duration, ws ...platform.Watch) <-chan waited {
	c := make(chan waited, len(ws))
	for i, w := range ws {
		go func() {
			why, err := w.Wait(ctx, 0, d)
			c <- waited{i, why, err}
		}()
	}
	return c
}

// The first waiter leads at once; those behind sleep on a frozen clock
// until it leaves; then one of them leads, the other sleeps on, and leads
// when that one leaves. Nobody waits out the hour.
func TestQueueNextLeads(t *testing.T) {
	w := fake.New()
	w.Freeze()
	ctx := t.Context()
	head := queueOf(t, w.Spawn())
	if why, err := head.Wait(ctx, 0, time.Hour); why != platform.WakeChange || err != nil {
		t.Fatalf("the first waiter's Wait = %v, %v; want change (it leads)", why, err)
	}
	if led, behind := place(t, head); !led || behind {
		t.Fatalf("the first waiter's place: led %v, behind %v; want led, not behind", led, behind)
	}
	behind := []platform.Watch{queueOf(t, w.Spawn()), queueOf(t, w.Spawn())}
	res := waitAll(ctx, time.Hour, behind...)
	if err := w.WaitSleepers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	head.Close()
	first := <-res
	if first.why != platform.WakeChange || first.err != nil {
		t.Fatalf("the first woken: %v, %v; want change (it leads)", first.why, first.err)
	}
	if led, behind := place(t, behind[first.i]); !led || behind {
		t.Fatalf("the new head's place: led %v, behind %v", led, behind)
	}
	// The other, woken by the second ring, watches the new head and
	// sleeps again.
	if err := w.WaitSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		t.Fatalf("the second waiter's Wait ended with %v, %v while a head waits", r.why, r.err)
	default:
	}
	behind[first.i].Close()
	if r := <-res; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("the last waiter: %v, %v; want change (it leads)", r.why, r.err)
	}
	if got := w.Now(); !got.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("the clock moved to %v", got)
	}
}

// A head killed: the waiter behind, which watches it, leads at once, with
// no ring and the clock frozen.
func TestQueueHeadKilledNextLeads(t *testing.T) {
	w := fake.New()
	w.Freeze()
	ctx := t.Context()
	hp := w.Spawn()
	head := queueOf(t, hp)
	if why, _ := head.Wait(ctx, 0, time.Hour); why != platform.WakeChange {
		t.Fatalf("the first waiter's Wait = %v; want change", why)
	}
	res := waitAll(ctx, time.Hour, queueOf(t, w.Spawn()))
	if err := w.WaitSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	hp.Kill()
	if r := <-res; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("the waiter behind a killed head: %v, %v; want change (it leads)", r.why, r.err)
	}
}

// At its bound a waiter behind a live head looks (the wait reports a
// timeout, and its place says behind); with no head it leads.
func TestQueueBound(t *testing.T) {
	w := fake.New()
	w.Freeze()
	ctx := t.Context()
	head := queueOf(t, w.Spawn())
	head.Wait(ctx, 0, time.Hour)
	q := queueOf(t, w.Spawn())
	res := waitAll(ctx, time.Second, q)
	if err := w.WaitSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Second)
	if r := <-res; r.why != platform.WakeTimeout || r.err != nil {
		t.Fatalf("at the bound behind a live head: %v, %v; want timeout", r.why, r.err)
	}
	if led, behind := place(t, q); led || !behind {
		t.Fatalf("place at the bound: led %v, behind %v; want behind", led, behind)
	}
}

// A killed waiter behind the head takes no ring: the one that queued
// after it is woken in its place.
func TestQueueKilledWaiterTakesNoRing(t *testing.T) {
	w := fake.New()
	w.Freeze()
	ctx := t.Context()
	head := queueOf(t, w.Spawn())
	head.Wait(ctx, 0, time.Hour)
	dead := w.Spawn()
	gone := waitAll(ctx, time.Hour, queueOf(t, dead))
	if err := w.WaitSleepers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	res := waitAll(ctx, time.Hour, queueOf(t, w.Spawn()))
	if err := w.WaitSleepers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	dead.Kill()
	if r := <-gone; r.err == nil {
		t.Fatalf("a killed waiter's Wait: %v, nil; want an error", r.why)
	}
	head.Close()
	if r := <-res; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("the live waiter: %v, %v; want change (it leads)", r.why, r.err)
	}
}

// A leaving head rings twice, so that a waiter the first ring woke and
// that died before it could lead leaves the lead to the one the second
// woke; with one ring (fake.BellOneRing, the exploration's mutation) that
// one sleeps on behind no head.
func TestQueueSecondRing(t *testing.T) {
	for _, fault := range []fake.BellFault{fake.BellSound, fake.BellOneRing} {
		w := fake.New()
		w.Freeze()
		w.BreakBells(fault)
		ctx, cancel := context.WithCancel(t.Context())
		head := queueOf(t, w.Spawn())
		head.Wait(ctx, 0, time.Hour)
		a, b := w.Spawn(), w.Spawn()
		// a, woken first, is killed as it reads the leaving head's ring.
		var leaving atomic.Bool
		w.Hook(fake.OpBell, bellDir+"/"+bellName, fake.Before, func(ev fake.Event) error {
			if ev.PID == a.PID() && ev.Call == "read" && leaving.Load() {
				a.Kill()
			}
			return nil
		})
		res := waitAll(ctx, time.Hour, queueOf(t, a), queueOf(t, b))
		if err := w.WaitSleepers(ctx, 2); err != nil {
			t.Fatal(err)
		}
		leaving.Store(true)
		head.Close() // its rings are rung as it returns
		if got := w.Sleepers(); fault == fake.BellOneRing && got != 1 || fault == fake.BellSound && got != 0 {
			t.Errorf("%v: %d sleepers once the head left", fault, got)
		}
		if fault == fake.BellOneRing {
			cancel()
		}
		for range 2 {
			r := <-res
			switch {
			case r.i == 0 && r.err == nil:
				t.Errorf("%v: the killed waiter's Wait: %v, nil; want an error", fault, r.why)
			case r.i == 1 && fault == fake.BellSound && (r.why != platform.WakeChange || r.err != nil):
				t.Errorf("sound: the waiter left: %v, %v; want change (it leads)", r.why, r.err)
			case r.i == 1 && fault == fake.BellOneRing && r.err == nil:
				t.Errorf("one ring: the waiter left: %v, nil; want it asleep until its context ended", r.why)
			}
		}
		cancel()
	}
}

// A file of someone else's at the bell's name is left alone: the queue
// gives a watch of the names instead, which tells no place.
func TestQueueLeavesOthersFileAlone(t *testing.T) {
	w := fake.New()
	if err := w.WriteFile(bellDir+"/"+bellName, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := w.Spawn().QueueWake().(platform.Queuer).Queue(bellDir, bellNames, bellName)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, ok := q.(platform.Placer); ok {
		t.Fatalf("a queue over a user's file: %T", q)
	}
	if got, err := w.ReadFile(bellDir + "/" + bellName); err != nil || string(got) != "mine\n" {
		t.Fatalf("the user's file: %q, %v", got, err)
	}
}
