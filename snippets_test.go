package proclock_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// TestREADMETestingSnippet: README's "Testing code that uses
// proclock" snippet, pasted as a newcomer would, for both mechanisms, and
// its closing promise ("b can now take the lock") held to.
func TestREADMETestingSnippet(t *testing.T) {
	for _, m := range []struct {
		name string
		p    func(*fake.Process) *platform.Platform
	}{{"sqlite", (*fake.Process).Platform}, {"file", func(p *fake.Process) *platform.Platform { return p.Platform().WithoutSQLite() }}} {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			w := fake.New()
			a, b := w.Spawn(), w.Spawn()
			lock, err := proclock.Acquire(ctx, m.p(a), "/app.lock", proclock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Release()
			_, err = proclock.Acquire(ctx, m.p(b), "/app.lock", proclock.Options{})
			held, ok := errors.AsType[*proclock.HeldError](err)
			if !ok || held.Holder == nil || held.Holder.PID != a.PID() {
				t.Fatalf("b's Acquire = %v; want held by a (pid %d)", err, a.PID())
			}
			a.Kill()
			l, err := proclock.Acquire(ctx, m.p(b), "/app.lock", proclock.Options{})
			if err != nil {
				t.Fatalf("b's Acquire after a was killed = %v; README says b can now take the lock", err)
			}
			l.Release()
		})
	}
}

// TestFakeDocSnippet: the crash staged in package fake's doc
// comment, pasted as written: the kill leaves nothing at /tmp/app.lock,
// and another process takes the lock at once.
func TestFakeDocSnippet(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	p := w.Spawn()
	w.Before("rename-noreplace", "/tmp/app.lock", func(ev fake.Event) error {
		if ev.PID == p.PID() {
			p.Kill() // dies with its stamp written, not yet in place
		}
		return nil
	})
	_, err := proclock.Acquire(ctx, p.Platform().WithoutSQLite(), "/tmp/app.lock", proclock.Options{})
	if !errors.Is(err, fake.ErrKilled) {
		t.Fatalf("Acquire = %v; the doc says it matches fake.ErrKilled", err)
	}
	if _, err := w.FS().Lstat("/tmp/app.lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("/tmp/app.lock after the crash: %v; the doc says nothing is there", err)
	}
	qp := w.Spawn().Platform().WithoutSQLite()
	lock, err := proclock.Acquire(ctx, qp, "/tmp/app.lock", proclock.Options{})
	if err != nil {
		t.Fatalf("Acquire after the crash = %v; want the lock at once", err)
	}
	lock.Release()
}

// TestFarFutureClock: a clock past year 9999 (a fake
// world advanced that far, or a Platform.Clock of one's own) makes no
// Acquire panic (encoding/json cannot write such a time): the lock is
// taken, its holder named, its acquisition time unrecorded.
func TestFarFutureClock(t *testing.T) {
	for _, mech := range []string{"sqlite", "file"} {
		t.Run(mech, func(t *testing.T) {
			w := fake.New()
			for w.Now().Year() <= 9999 {
				w.Advance(290 * 365 * 24 * time.Hour)
			}
			p := w.Spawn().Platform()
			if mech == "file" {
				p = p.WithoutSQLite()
			}
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Acquire in year %d panicked: %v", w.Now().Year(), r)
				}
			}()
			l, err := proclock.Acquire(context.Background(), p, "/tmp/far.lock", proclock.Options{})
			if err != nil {
				t.Fatalf("Acquire in year %d: %v", w.Now().Year(), err)
			}
			defer l.Release()
			st, err := proclock.Inspect(context.Background(), w.Spawn().Platform(), "/tmp/far.lock")
			if err != nil || st.State != proclock.StateHeld || st.Holder == nil {
				t.Fatalf("Inspect of a lock taken in year %d = %+v, %v; want held, its holder named", w.Now().Year(), st, err)
			}
		})
	}
}
