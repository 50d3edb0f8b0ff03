package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// The fake backend stands for a cluster backend in the command's tests,
// so that the backend seam, the stop on loss and the exit codes are tried
// with real processes and no server. A lock "fake:DIR" is the directory
// DIR, which the test steers through files:
//
//	held       exists while someone holds the lock (O_EXCL)
//	deadline   the held lock's local deadline, in Unix nanoseconds: it
//	           is lost when that passes, as a lease not renewed
//	lose       once created, the held lock is lost (a key deleted)
//	fence      the fencing token the holder gets
//
// "fake:unreachable" is a server that cannot be reached. The fake's own
// option --fake-ttl SECONDS gives the TTL that Grace checks against, as a
// cluster backend does: the grace and its margin must fit three times.

// fakeRole is the test binary as a proclock with the fake backend.
var fakeRole = locktest.NewRole("fake-proclock", func(args []string) int {
	return Main(args, os.Stdin, os.Stdout, os.Stderr, &fakeBackend{ttl: 10 * time.Second})
})

type fakeBackend struct{ ttl time.Duration }

func (b *fakeBackend) Claims(name string) bool { return strings.HasPrefix(name, "fake:") }

func (b *fakeBackend) Flags() []Flag {
	return []Flag{{Names: []string{"--fake-ttl"}, Value: "SECONDS", Set: func(s string) error {
		n, err := strconv.Atoi(s)
		b.ttl = time.Duration(n) * time.Second
		return err
	}}}
}

func (b *fakeBackend) Usage() string {
	return "Fake locks: fake:DIR (tests only).\n  --fake-ttl SECONDS  the TTL that Grace checks the grace against\n"
}

func (b *fakeBackend) Open(ctx context.Context, name string) (Target, error) {
	dir := strings.TrimPrefix(name, "fake:")
	if dir == "unreachable" {
		return nil, fmt.Errorf("proclock: fake %s: %w", name, ErrUnreachable)
	}
	return &fakeTarget{name: name, dir: dir, ttl: b.ttl}, nil
}

type fakeTarget struct {
	name, dir string
	ttl       time.Duration
}

func (t *fakeTarget) Grace(asked time.Duration) (time.Duration, error) {
	if asked == 0 {
		return t.ttl / 5, nil
	}
	if margin := t.ttl / 10; 3*(asked+margin) > t.ttl {
		return 0, fmt.Errorf("--grace %v: too long for TTL %v", asked, t.ttl)
	}
	return asked, nil
}

func (t *fakeTarget) Close() error { return nil }

func (t *fakeTarget) Acquire(ctx context.Context, wait bool) (Held, error) {
	for {
		f, err := os.OpenFile(filepath.Join(t.dir, "held"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			fence, _ := os.ReadFile(filepath.Join(t.dir, "fence"))
			h := &fakeHeld{t: t, fence: strings.TrimSpace(string(fence)), lost: make(chan struct{}), quit: make(chan struct{})}
			go h.watch()
			return h, nil
		}
		held := &proclock.HeldError{Path: t.name, Reason: "a fake holder"}
		if !wait {
			return nil, held
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w while waiting: %w", ctx.Err(), held)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (t *fakeTarget) Inspect(ctx context.Context) (Report, error) {
	rep := Report{Status: proclock.Status{Path: t.name, State: proclock.StateAbsent, Mechanism: "fake"},
		Cluster: &ClusterStatus{Name: t.dir}}
	if _, err := os.Stat(filepath.Join(t.dir, "held")); err == nil {
		rep.State, rep.Reason = proclock.StateHeld, "a fake holder"
	}
	return rep, nil
}

type fakeHeld struct {
	t     *fakeTarget
	fence string
	lost  chan struct{}
	quit  chan struct{}
	err   error
}

// watch closes lost when the test says so, as a backend's keeper would.
func (h *fakeHeld) watch() {
	for {
		if _, err := os.Stat(filepath.Join(h.t.dir, "lose")); err == nil {
			h.err = &proclock.LostError{Path: h.t.name, Err: errors.New("key deleted")}
			close(h.lost)
			return
		}
		if d := h.Deadline(); !d.IsZero() && !time.Now().Before(d) {
			h.err = &proclock.LostError{Path: h.t.name, Err: errors.New("deadline passed")}
			close(h.lost)
			return
		}
		select {
		case <-h.quit:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (h *fakeHeld) Lost() <-chan struct{} { return h.lost }

func (h *fakeHeld) Err() error {
	select {
	case <-h.lost:
		return h.err
	default:
		return nil
	}
}

func (h *fakeHeld) Deadline() time.Time {
	b, err := os.ReadFile(filepath.Join(h.t.dir, "deadline"))
	if err != nil {
		return time.Time{}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (h *fakeHeld) Env() []string { return []string{"PROCLOCK_FENCE=" + h.fence} }

func (h *fakeHeld) Describe() string { return "fence " + h.fence }

func (h *fakeHeld) Release() error {
	close(h.quit)
	return os.Remove(filepath.Join(h.t.dir, "held"))
}

// TestNotice: a Target's Acquire finds -v's line function in its context
// (Notice), and none where -v did not put one.
func TestNotice(t *testing.T) {
	if Notice(context.Background()) != nil {
		t.Fatal("Notice without -v: a function; want nil")
	}
	var said []string
	ctx := context.WithValue(context.Background(), noticeKey{}, func(s string) { said = append(said, s) })
	tell := Notice(ctx)
	if tell == nil {
		t.Fatal("Notice under -v: nil")
	}
	tell("lock-delay 2s")
	if len(said) != 1 || said[0] != "lock-delay 2s" {
		t.Fatalf("-v was told %q; want the line", said)
	}
}
