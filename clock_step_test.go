package proclock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// TestFutureMtimeJudgedFromFirstSight (issue 19, "Why" 8): a clock
// stepped back leaves files whose mtime is ahead of it. An empty lock file
// or an empty mark (a crashed writer's, or another tool's, judged by the
// 30 s rule) 20 s ahead is judged by the time since this process first
// saw it: held for 30 s from then, free after, on either mechanism. On
// the old code its age was negative, and it kept everyone out for the
// step. One more than 30 s ahead (a day) is past the window at once
// (issue 29, item 4): each one-shot caller sees it first, and it used to
// keep them all out until the clock caught up.
func TestFutureMtimeJudgedFromFirstSight(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		file  bool // the file mechanism takes it; else SQLite
		mark  bool // an empty mark beside a free database; else an empty lock file
		ahead time.Duration
	}{
		{"empty lock file, file mechanism", true, false, 20 * time.Second},
		{"empty mark, file mechanism", true, true, 20 * time.Second},
		{"empty mark, SQLite", false, true, 20 * time.Second},
		{"empty lock file a day ahead, file mechanism", true, false, 24 * time.Hour},
		{"empty mark a day ahead, file mechanism", true, true, 24 * time.Hour},
		{"empty mark a day ahead, SQLite", false, true, 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := fake.New()
			if tc.mark {
				l, err := proclock.Acquire(ctx, w.Spawn().Platform(), appLock, proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Release(); err != nil {
					t.Fatal(err)
				}
			}
			name := appLock
			if tc.mark {
				name = lockrec.MarkPath(appLock)
			}
			if err := w.WriteFile(name, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			p := w.Spawn()
			pp := p.Platform()
			if tc.file {
				pp = fileMech(p)
			}
			// The file's mtime is tc.ahead ahead of this process's clock.
			pp.Clock, pp.Wake = behind{pp.Clock, tc.ahead}, nil
			l, err := proclock.Acquire(ctx, pp, appLock, proclock.Options{})
			switch {
			case tc.ahead > lockrec.MarkWindow && err != nil:
				t.Fatalf("Acquire at first sight of a file %v ahead = %v; want the lock", tc.ahead, err)
			case tc.ahead > lockrec.MarkWindow:
				l.Release()
				return
			case !errors.Is(err, proclock.ErrHeld) && !tc.mark:
				t.Fatalf("Acquire at first sight = %v; want held (30 s from now)", err)
			}
			w.Advance(tc.ahead + 31*time.Second) // the clock catches up, then the 30 s
			l, err = proclock.Acquire(ctx, pp, appLock, proclock.Options{})
			if err != nil {
				t.Fatalf("Acquire 31 s after the clock caught up with a file %v ahead = %v; want the lock", tc.ahead, err)
			}
			l.Release()
		})
	}
}

// behind is a clock stepped back by d.
type behind struct {
	platform.Clock
	d time.Duration
}

func (c behind) Now() time.Time { return c.Clock.Now().Add(-c.d) }

// TestHeldForNeverNegative (issue 19, "Why" 8): a holder that took the
// lock by a clock since stepped back (its acquiredAt ahead of the reader's
// clock) is shown held for no time, never a negative time. On the old
// code HeldFor was minus the step.
func TestHeldForNeverNegative(t *testing.T) {
	ctx := context.Background()
	for _, file := range []bool{false, true} {
		w := fake.New()
		holder := w.Spawn()
		pp := holder.Platform()
		if file {
			pp = fileMech(holder)
		}
		l, err := proclock.Acquire(ctx, pp, appLock, proclock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// The holder's record, as written by its clock a day ahead of
		// the reader's (stepped back since).
		name := appLock
		if !file {
			name = lockrec.MarkPath(appLock)
		}
		data, err := w.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := lockrec.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		rec.AcquiredAt = w.Now().Add(24 * time.Hour)
		if err := w.WriteFile(name, rec.Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := proclock.Inspect(ctx, w.Spawn().Platform(), appLock)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != proclock.StateHeld || st.AcquiredAt.IsZero() || st.HeldFor < 0 {
			t.Errorf("file mechanism %v: Inspect = %v, acquired at %v, held for %v; want held, for 0 or more", file, st.State, st.AcquiredAt, st.HeldFor)
		}
		l.Release()
	}
}
