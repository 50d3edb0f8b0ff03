package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// On a running clock a process's Wait is its Sleep: time moves on by d at
// once. A watched pid that is gone, or a done ctx, end it at once.
func TestWakeOnRunningClock(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	gone := w.Spawn()
	gone.Kill()
	wake := p.Platform().Wake
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		pid     int
		d       time.Duration
		want    platform.Wakeup
		wantErr error
		moved   time.Duration
	}{
		{"time up", context.Background(), 0, time.Second, platform.WakeTimeout, nil, time.Second},
		{"time up, holder alive", context.Background(), p.PID(), time.Second, platform.WakeTimeout, nil, time.Second},
		{"zero", context.Background(), 0, 0, platform.WakeTimeout, nil, 0},
		{"holder gone", context.Background(), gone.PID(), time.Second, platform.WakeExit, nil, 0},
		{"cancelled", cancelled, 0, time.Second, platform.WakeTimeout, context.Canceled, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.Now()
			why, err := wake.Wait(tt.ctx, "/tmp", []string{"app.lock"}, tt.pid, tt.d)
			if why != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("Wait = %v, %v; want %v, %v", why, err, tt.want, tt.wantErr)
			}
			if got := w.Now().Sub(before); got != tt.moved {
				t.Errorf("Wait moved time by %v; want %v", got, tt.moved)
			}
		})
	}
}

// waitResult is what a Wait returned.
type waitResult struct {
	why platform.Wakeup
	err error
}

// waitFrozen starts a Wait of p's on a frozen world and returns once it
// is blocked, with the channel its result comes on.
func waitFrozen(t *testing.T, w *fake.World, p *fake.Process, ctx context.Context, dir string, pid int) <-chan waitResult {
	t.Helper()
	res := make(chan waitResult, 1)
	go func() {
		why, err := p.Platform().Wake.Wait(ctx, dir, []string{"app.lock", "app.lock.holder"}, pid, time.Minute)
		res <- waitResult{why, err}
	}()
	guard, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WaitSleepers(guard, 1); err != nil {
		t.Fatalf("the Wait never blocked: %v", err)
	}
	return res
}

// On a frozen clock, a Wait ends without time moving when a watched name
// goes away, by any process or the world itself and through any path to
// the directory, or the watched pid dies; it ends with ctx or its own
// death. Nothing else ends it before Advance reaches its time: not a
// watched name created or replaced (someone taking the lock), read or
// written.
func TestWakeOnFrozenClock(t *testing.T) {
	tests := []struct {
		name    string
		act     func(t *testing.T, w *fake.World, other, holder *fake.Process, cancel func())
		want    platform.Wakeup
		wantErr error
	}{
		{"removed by another process", func(t *testing.T, w *fake.World, other, _ *fake.Process, _ func()) {
			mustDo(t, other.FS().Remove("/locks/app.lock.holder"))
		}, platform.WakeChange, nil},
		{"removed by the world", func(t *testing.T, w *fake.World, _, _ *fake.Process, _ func()) {
			mustDo(t, w.FS().Remove("/locks/app.lock.holder"))
		}, platform.WakeChange, nil},
		{"renamed away", func(t *testing.T, w *fake.World, other, _ *fake.Process, _ func()) {
			mustDo(t, other.FS().Rename("/locks/app.lock.holder", "/locks/aside"))
		}, platform.WakeChange, nil},
		{"removed through a symlink", func(t *testing.T, w *fake.World, other, _ *fake.Process, _ func()) {
			mustDo(t, other.FS().Remove("/tmp/link/app.lock.holder"))
		}, platform.WakeChange, nil},
		{"holder killed", func(t *testing.T, w *fake.World, _, holder *fake.Process, _ func()) {
			holder.Kill()
		}, platform.WakeExit, nil},
		{"holder's host rebooted", func(t *testing.T, w *fake.World, _, _ *fake.Process, _ func()) {
			w.Reboot()
		}, platform.WakeTimeout, fake.ErrKilled}, // the waiter dies too
		{"cancelled", func(t *testing.T, _ *fake.World, _, _ *fake.Process, cancel func()) {
			cancel()
		}, platform.WakeTimeout, context.Canceled},
		{"time up", func(t *testing.T, w *fake.World, _, _ *fake.Process, _ func()) {
			w.Advance(time.Minute)
		}, platform.WakeTimeout, nil},
		{"created, replaced, written, other names", func(t *testing.T, w *fake.World, other, _ *fake.Process, _ func()) {
			fs := other.FS()
			mustDo(t, writeFile(fs, "/locks/app.lock", nil, 0o644))
			mustDo(t, fs.Rename("/locks/tmp", "/locks/app.lock.holder"))
			mustDo(t, writeFile(fs, "/locks/tmp", nil, 0o644))
			mustDo(t, fs.Rename("/locks/tmp", "/locks/tmp2"))
			mustDo(t, fs.Remove("/locks/tmp2"))
			mustDo(t, writeFile(fs, "/locks/app.lock.holder", []byte("new stamp"), 0o644))
			if _, err := readFile(fs, "/locks/app.lock.holder"); err != nil {
				t.Fatal(err)
			}
			mustDo(t, w.Chmod("/locks/app.lock.holder", 0o600))
			mustDo(t, writeFile(fs, "/elsewhere/app.lock", nil, 0o644))
			// Had any of that woken the Wait, it would say so: a change
			// outranks the time, whatever comes first to it.
			w.Advance(time.Minute)
		}, platform.WakeTimeout, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := fake.New()
			w.Freeze()
			for _, dir := range []string{"/locks", "/elsewhere"} {
				mustDo(t, w.Mkdir(dir, 0o777))
			}
			mustDo(t, w.Symlink("/locks", "/tmp/link"))
			for _, f := range []string{"/locks/app.lock.holder", "/locks/tmp"} {
				mustDo(t, w.WriteFile(f, []byte("stamp"), 0o644))
			}
			waiter, other, holder := w.Spawn(), w.Spawn(), w.Spawn()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start := w.Now()
			res := waitFrozen(t, w, waiter, ctx, "/locks", holder.PID())

			tt.act(t, w, other, holder, cancel)
			r := <-res
			if r.why != tt.want || !errors.Is(r.err, tt.wantErr) {
				t.Errorf("Wait = %v, %v; want %v, %v", r.why, r.err, tt.want, tt.wantErr)
			}
			if tt.want != platform.WakeTimeout && !w.Now().Equal(start) {
				t.Errorf("time moved by %v", w.Now().Sub(start))
			}
			if n := w.Sleepers(); n != 0 {
				t.Errorf("%d sleepers left after the Wait", n)
			}
		})
	}
}

// A Wait of a killed process fails at once.
func TestWakeOfTheDead(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	wake := p.Platform().Wake
	p.Kill()
	if _, err := wake.Wait(context.Background(), "/tmp", []string{"app.lock"}, 0, time.Second); !errors.Is(err, fake.ErrKilled) {
		t.Errorf("Wait = %v; want an error matching ErrKilled", err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
