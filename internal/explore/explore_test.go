package explore_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/proclock/proclock/internal/explore"
)

const lockPath = "/tmp/toy.lock"

// toyLock takes a lock by creating a file, with O_EXCL or, broken, after
// a look that found nothing.
func toyLock(excl bool) func(u *explore.User) error {
	return func(u *explore.User) error {
		fsys := u.Platform().FS
		if !excl {
			if _, err := fsys.Lstat(lockPath); !errors.Is(err, fs.ErrNotExist) {
				return nil // held
			}
		}
		flag := os.O_RDWR | os.O_CREATE
		if excl {
			flag |= os.O_EXCL
		}
		f, err := fsys.OpenFile(lockPath, flag, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return nil // held
		}
		if err != nil {
			return err
		}
		f.Close()
		u.Critical()
		fsys.Remove(lockPath) // fails when the other one removed it first
		return nil
	}
}

// A lock that looks before it creates lets two in; the explorer finds the
// schedule, and its trail shows both looks before either create.
func TestFindsLookThenCreate(t *testing.T) {
	_, err := explore.Explore(explore.Config{
		MaxSteps: 50,
		Setup: func(r *explore.Run) func() error {
			r.User("a", toyLock(false))
			r.User("b", toyLock(false))
			return nil
		},
	})
	var f *explore.Failure
	if !errors.As(err, &f) {
		t.Fatalf("exploration: %v; want a failure", err)
	}
	if !strings.Contains(f.Err.Error(), "while") || len(f.Trail) < 4 {
		t.Fatalf("failure %v", f)
	}
	looks := 0
	for _, s := range f.Trail[:2] {
		if strings.Contains(s, "stat "+lockPath) {
			looks++
		}
	}
	if looks != 2 {
		t.Errorf("trail does not start with both looks:\n%v", f)
	}
}

// An O_EXCL lock passes, with crashes too, and the explorer says it
// explored it all.
func TestExclusiveCreatePasses(t *testing.T) {
	for _, crash := range []bool{false, true} {
		res, err := explore.Explore(explore.Config{
			MaxSteps: 50,
			Crash:    crash,
			Setup: func(r *explore.Run) func() error {
				r.User("a", toyLock(true))
				r.User("b", toyLock(true))
				return nil
			},
		})
		if err != nil || !res.Complete || res.Cut != 0 {
			t.Fatalf("crash %v: %v, %v", crash, res, err)
		}
		if crash && res.Crashed == 0 {
			t.Errorf("crash %v: %v; want runs with a crash", crash, res)
		}
	}
}

// Sleep sets: users whose steps touch different files make one run; two
// users who each change one file twice make as many runs as there are
// orders of the four steps that keep each user's own order (6).
func TestCountsSchedules(t *testing.T) {
	count := func(paths ...string) int {
		t.Helper()
		res, err := explore.Explore(explore.Config{
			MaxSteps: 50,
			Setup: func(r *explore.Run) func() error {
				for i, p := range paths {
					r.User(string(rune('a'+i)), func(u *explore.User) error {
						fsys := u.Platform().FS
						fsys.Remove(p)
						fsys.Remove(p)
						return nil
					})
				}
				return nil
			},
		})
		if err != nil || !res.Complete {
			t.Fatalf("%v: %v, %v", paths, res, err)
		}
		return res.Runs - res.Pruned
	}
	if n := count("/tmp/x", "/tmp/y"); n != 1 {
		t.Errorf("independent users: %d runs; want 1", n)
	}
	if n := count("/tmp/x", "/tmp/x"); n != 6 {
		t.Errorf("dependent users: %d runs; want 6", n)
	}
}

// With a preemption bound of 1, two users of two steps each run in 4 of
// their 6 orders: all but the two that switch at every step.
func TestPreemptionBound(t *testing.T) {
	res, err := explore.Explore(explore.Config{
		MaxSteps:    50,
		Preemptions: 1,
		Setup: func(r *explore.Run) func() error {
			for _, name := range []string{"a", "b"} {
				r.User(name, func(u *explore.User) error {
					fsys := u.Platform().FS
					fsys.Remove("/tmp/x")
					fsys.Remove("/tmp/x")
					return nil
				})
			}
			return nil
		},
	})
	if err != nil || !res.Complete || res.Runs != 4 {
		t.Fatalf("%v, %v; want 4 runs", res, err)
	}
}

// A user that blocks outside the scheduler fails the run instead of
// hanging it.
func TestStalledUserFails(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	_, err := explore.Explore(explore.Config{
		MaxSteps: 10,
		Stall:    1,
		Setup: func(r *explore.Run) func() error {
			r.User("a", func(u *explore.User) error {
				<-block
				return nil
			})
			return nil
		},
	})
	if err == nil || !strings.Contains(err.Error(), "blocked outside the scheduler") {
		t.Fatalf("exploration: %v; want a stall", err)
	}
}
