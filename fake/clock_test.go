package fake_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
)

func TestSleepMovesTimeAtOnce(t *testing.T) {
	w := fake.New()
	clock := w.Spawn().Platform().Clock
	start := w.Now()
	if epoch := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC); !start.Equal(epoch) {
		t.Errorf("a new world's time is %v, want %v", start, epoch)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		d       time.Duration
		wantErr error
		moved   time.Duration
	}{
		{"sleep", context.Background(), 10 * time.Millisecond, nil, 10 * time.Millisecond},
		{"zero", context.Background(), 0, nil, 0},
		{"negative", context.Background(), -time.Second, nil, 0},
		{"cancelled", cancelled, time.Second, context.Canceled, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.Now()
			err := clock.Sleep(tt.ctx, tt.d)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Sleep(%v) = %v, want %v", tt.d, err, tt.wantErr)
			}
			if got := w.Now().Sub(before); got != tt.moved {
				t.Errorf("Sleep(%v) moved time by %v, want %v", tt.d, got, tt.moved)
			}
		})
	}
	if !clock.Now().Equal(w.Now()) || !w.Now().Equal(start.Add(10*time.Millisecond)) {
		t.Errorf("process clock %v, world %v, want both %v", clock.Now(), w.Now(), start.Add(10*time.Millisecond))
	}
}

// sleepInBackground sleeps on clock in a goroutine; the channel gives its
// result.
func sleepInBackground(ctx context.Context, clock interface {
	Sleep(context.Context, time.Duration) error
}, d time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(ctx, d) }()
	return done
}

func waitSleepers(t *testing.T, w *fake.World, n int) {
	t.Helper()
	if err := w.WaitSleepers(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func TestFrozenSleepWaitsForAdvance(t *testing.T) {
	w := fake.New()
	w.Freeze()
	start := w.Now()
	done := sleepInBackground(context.Background(), w.Spawn().Platform().Clock, time.Second)
	waitSleepers(t, w, 1)

	w.Advance(999 * time.Millisecond)
	if w.Sleepers() != 1 {
		t.Fatal("a sleep ended before Advance reached its deadline")
	}
	select {
	case err := <-done:
		t.Fatalf("Sleep returned %v before its deadline", err)
	default:
	}
	w.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Errorf("Sleep = %v after Advance reached its deadline", err)
	}
	if got := w.Now().Sub(start); got != time.Second {
		t.Errorf("time moved %v, want exactly the 1s advanced", got)
	}
}

// A frozen sleep ends early, time unmoved and no sleeper left, when its
// context is done or its process dies.
func TestFrozenSleepEndsEarly(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(cancel func(), p *fake.Process)
		want error
	}{
		{"cancelled", func(cancel func(), _ *fake.Process) { cancel() }, context.Canceled},
		{"killed", func(_ func(), p *fake.Process) { p.Kill() }, fake.ErrKilled},
	} {
		w := fake.New()
		w.Freeze()
		start, p := w.Now(), w.Spawn()
		ctx, cancel := context.WithCancel(context.Background())
		done := sleepInBackground(ctx, p.Platform().Clock, time.Hour)
		waitSleepers(t, w, 1)
		c.end(cancel, p)
		if err := <-done; !errors.Is(err, c.want) {
			t.Errorf("%s: Sleep = %v, want %v", c.name, err, c.want)
		}
		if !w.Now().Equal(start) || w.Sleepers() != 0 {
			t.Errorf("%s: time moved %v, %d sleepers left", c.name, w.Now().Sub(start), w.Sleepers())
		}
		cancel()
	}
}

func TestThawReleasesSleepers(t *testing.T) {
	w := fake.New()
	thaw := w.Freeze()
	start := w.Now()
	clock := w.Spawn().Platform().Clock
	short := sleepInBackground(context.Background(), clock, time.Second)
	long := sleepInBackground(context.Background(), clock, 2*time.Second)
	waitSleepers(t, w, 2)
	thaw()
	for _, done := range []<-chan error{short, long} {
		if err := <-done; err != nil {
			t.Errorf("Sleep after Thaw = %v", err)
		}
	}
	if got := w.Now().Sub(start); got != 2*time.Second {
		t.Errorf("Thaw moved time by %v, want the latest deadline, 2s", got)
	}
	if err := clock.Sleep(context.Background(), time.Second); err != nil || w.Now().Sub(start) != 3*time.Second {
		t.Errorf("Sleep after Thaw = %v, time at +%v; want nil at +3s", err, w.Now().Sub(start))
	}
}

// The building blocks of the 30 s window of an empty lock file: Advance
// moves Now, and the mtime of a later write comes from the world's clock.
func TestFileTimesComeFromTheWorldsClock(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	f, err := p.FS().OpenFile("/tmp/lock", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	created := w.Now()
	w.Advance(30 * time.Second)
	if got := w.Now().Sub(created); got != 30*time.Second {
		t.Fatalf("Advance(30s) moved Now by %v", got)
	}
	fi, err := p.FS().Lstat("/tmp/lock")
	if err != nil || !fi.ModTime().Equal(created) {
		t.Fatalf("mtime of the empty file = %v, %v; want its creation, %v", fi.ModTime(), err, created)
	}
	if _, err := f.Write([]byte("stamp")); err != nil {
		t.Fatal(err)
	}
	fi, err = p.FS().Lstat("/tmp/lock")
	if err != nil || !fi.ModTime().Equal(w.Now()) {
		t.Errorf("mtime after a write = %v, %v; want the world's now, %v", fi.ModTime(), err, w.Now())
	}
	w.Advance(time.Second)
	if err := writeFile(p.FS(), "/tmp/other", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := p.FS().FileID("/tmp/other")
	if err != nil || !id.HasBirth || !id.Birth.Equal(w.Now()) {
		t.Errorf("birth time %v (known %v), %v; want the world's now, %v", id.Birth, id.HasBirth, err, w.Now())
	}
}
