package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// jobScript is a COMMAND that starts a child that outlives it (sleep, in
// the background), says the child's pid, and then, with "stay", waits
// itself; without, it exits at once.
func jobScript(stay bool) []string {
	script := `sleep 1000 & echo $!`
	if stay {
		script += `; exec sleep 1000`
	}
	return []string{"--", "sh", "-c", script}
}

// readPID reads the child's pid that jobScript prints.
func (r *running) readPID() int {
	r.t.Helper()
	r.stdout.SetReadDeadline(time.Now().Add(deadline))
	got, err := r.lines.ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(got))
	if err != nil || perr != nil || pid <= 0 {
		r.t.Fatalf("proclock %q: read %q, %v; want a pid; stderr: %s", r.cmd.Args[1:], got, err, r.readStderr())
	}
	return pid
}

// killAndAwait kills pid, not a child of the test, and returns once it has
// exited (its pidfd says so): its files, and its kernel locks, are gone.
func killAndAwait(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatalf("killing %d: %v", pid, err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(deadline/time.Millisecond))
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("waiting for %d to exit: %d, %v", pid, n, err)
		}
		return
	}
}

// skipUnlessFileSeesFlock skips t where the file mechanism does not look at
// the kernel's locks on a lock file whose holder is dead (docs/protocol.md,
// "The kernel's locks"): there a killed run's job keeps only SQLite
// processes out. It stages that: a stamp of a dead pid, flock(2)-locked.
func skipUnlessFileSeesFlock(t *testing.T) {
	t.Helper()
	lock := filepath.Join(t.TempDir(), "x.lock")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	stamp := fmt.Sprintf(`{"format":"proclock/1","host":%q,"pid":%d}`, host, locktest.DeadPID(t))
	if err := os.WriteFile(lock, []byte(stamp), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	held, err := proclock.IsHeld(context.Background(), platform.Native().WithoutSQLite(), lock)
	if err != nil {
		t.Fatal(err)
	}
	if !held {
		t.Skip("this file mechanism takes a dead holder's lock file that a flock(2) lock holds (it does not look at the kernel's locks)")
	}
}

// TestRunKilledJobKeepsLock: a `proclock run` killed with SIGKILL while a
// process of the job that the guard does not reach lives (it left
// COMMAND's group with setsid, or the guard was killed first; proclock
// warns of that) leaves the lock to that process, through descriptor 3: a
// second `run -n` is refused until it exits, then succeeds. On both
// mechanisms, with a taker of either, on a path's first and second run.
func TestRunKilledJobKeepsLock(t *testing.T) {
	for _, holder := range mechanisms {
		for _, taker := range mechanisms {
			for _, second := range []bool{false, true} {
				for _, guardKilled := range []bool{false, true} {
					name := holder + " holds, " + taker + " takes"
					if second {
						name += ", second run"
					}
					if guardKilled {
						name += ", guard killed"
					}
					t.Run(name, func(t *testing.T) {
						if taker == "file" {
							skipUnlessFileSeesFlock(t)
						}
						t.Parallel()
						lock := filepath.Join(t.TempDir(), "x.lock")
						if second {
							// The path's second run: the lock's file is there
							// already (a SQLite lock's database stays).
							if res := runProclock(t, line("run", "--mechanism", holder, lock, "--", "true")...); res.code != 0 {
								t.Fatalf("first run: exit %d; stderr: %s", res.code, res.stderr)
							}
						}
						job := []string{"--", "sh", "-c", `setsid sh -c 'echo $$; exec sleep 1000' & exec sleep 1000`}
						if guardKilled {
							job = jobScript(true) // its child stays in COMMAND's group
						}
						r := startProclock(t, line("run", "--mechanism", holder, lock, job)...)
						child := r.readPID()
						if guardKilled {
							killAndAwait(t, guardOf(t, r.cmd.Process.Pid))
							r.awaitStderr("COMMAND's guard ended")
						}
						r.cmd.Process.Signal(syscall.SIGKILL)
						r.wait()

						if st := statusJSON(t, lock); st.State != "held" || st.Reason == "" {
							t.Errorf("status beside the killed run's live child: %+v; want held, with a reason that says who holds it", st)
						} else {
							t.Logf("status: %s", st.Reason)
						}
						next := line("run", "-n", "--mechanism", taker, lock, "--", "true")
						for range 2 {
							if res := runProclock(t, next...); res.code != 1 {
								t.Fatalf("run -n beside the killed run's live child: exit %d, want 1 (held); stderr: %s", res.code, res.stderr)
							}
						}
						killAndAwait(t, child)
						if res := runProclock(t, next...); res.code != 0 {
							t.Fatalf("run -n once the child exited: exit %d, want 0; stderr: %s", res.code, res.stderr)
						}
					})
				}
			}
		}
	}
}

// TestRunPassesLockEveryRun: COMMAND gets the lock's descriptor 3 on
// every run of a path, the first (the lock's file created) and the next
// ones (a SQLite lock's database already there), for both mechanisms.
func TestRunPassesLockEveryRun(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			lock := filepath.Join(t.TempDir(), "x.lock")
			for run := 1; run <= 3; run++ {
				res := runProclock(t, line("run", "--mechanism", mech, lock, "--", "sh", "-c", `if [ -e /proc/self/fd/3 ]; then echo fd3; else echo none; fi`)...)
				if res.code != 0 || strings.TrimSpace(res.stdout) != "fd3" {
					t.Fatalf("run %d: exit %d, COMMAND said %q; want fd3; stderr: %s", run, res.code, res.stdout, res.stderr)
				}
			}
		})
	}
}

// blindFS is the OS's FS without its flock(2) locks (fsx.Flocker, and
// every other optional power): a file mechanism on it sees none of the
// kernel's locks, as a wasm guest's does.
type blindFS struct{ lockfs.FS }

// TestRunKilledJobDies: a `proclock run` killed with SIGKILL takes its
// job with it: COMMAND's guard kills COMMAND's process group, a
// background child included. A second run waiting for the lock gets it
// only once the child is dead (the kernel's locks keep it out until
// then), and a file mechanism blind to the kernel's locks (a wasm
// guest's) finds the child dead and takes the lock. Today's code (no
// guard) left the child running: the waiting run timed out.
func TestRunKilledJobDies(t *testing.T) {
	for _, holder := range mechanisms {
		t.Run(holder, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			r := startProclock(t, line("run", "--mechanism", holder, lock, jobScript(true))...)
			child := r.readPID()
			dead := pidExit(t, child)
			r.cmd.Process.Signal(syscall.SIGKILL)
			r.wait()
			killed := time.Now()

			res := runProclock(t, line("run", "-w", "20", lock, "--", "true")...)
			select {
			case <-dead:
			default:
				t.Fatalf("a second run ended (exit %d) while the killed run's child %d lives; stderr: %s", res.code, child, res.stderr)
			}
			if res.code != 0 {
				t.Fatalf("second run: exit %d, want 0; stderr: %s", res.code, res.stderr)
			}
			t.Logf("the second run, waiting, had the lock and ended %v after the killed run's death, the child dead before", time.Since(killed))

			// The blind taker, after the second run released the lock: the
			// stamp or mark names a dead proclock, as it did for the first.
			blind := platform.Native().WithoutSQLite()
			blind.FS = blindFS{blind.FS}
			l, err := proclock.Acquire(context.Background(), blind, lock, proclock.Options{})
			if err != nil {
				t.Fatalf("blind file mechanism after the job died: %v", err)
			}
			l.Release()
		})
	}
}

// TestRunKilledJobDiesBlind: as TestRunKilledJobDies, with the blind file
// mechanism (a wasm guest's) as the only next taker: it may take the lock
// as soon as proclock is dead, and the child must be gone by then, or
// within the guard's reaction, which is logged. Today's code left the
// child running beside the blind holder.
func TestRunKilledJobDiesBlind(t *testing.T) {
	for _, holder := range mechanisms {
		t.Run(holder, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			r := startProclock(t, line("run", "--mechanism", holder, lock, jobScript(true))...)
			child := r.readPID()
			dead := pidExit(t, child)
			r.cmd.Process.Signal(syscall.SIGKILL)
			r.wait()
			blind := platform.Native().WithoutSQLite()
			blind.FS = blindFS{blind.FS}
			l, err := proclock.Acquire(context.Background(), blind, lock, proclock.Options{Wait: true})
			if err != nil {
				t.Fatalf("blind file mechanism after the run's death: %v", err)
			}
			held := time.Now()
			defer l.Release()
			select {
			case at := <-dead:
				t.Logf("the killed run's child died %v after the blind taker held the lock", at.Sub(held))
			case <-time.After(deadline):
				t.Fatalf("the killed run's child %d runs on beside the blind holder", child)
			}
		})
	}
}

// pidExit returns a channel that gets the time pid exited, seen through
// its pidfd (it need not be the test's child).
func pidExit(t *testing.T, pid int) <-chan time.Time {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	ch := make(chan time.Time, 1)
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if n > 0 || (err != nil && err != syscall.EINTR) {
				ch <- time.Now()
				return
			}
		}
	}()
	t.Cleanup(func() { unix.Kill(pid, unix.SIGKILL) })
	return ch
}

// TestRunWaitsForLeftovers: a COMMAND that exits leaving a child behind
// does not end the job: proclock holds the lock, and waits, until the child
// exits, then exits with COMMAND's status and the lock is free.
func TestRunWaitsForLeftovers(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			r := startProclock(t, line("run", "--mechanism", mech, lock, jobScript(false))...)
			child := r.readPID()
			if res := runProclock(t, line("run", "-n", lock, "--", "true")...); res.code != 1 {
				t.Fatalf("run -n while COMMAND's child lives: exit %d, want 1 (held); stderr: %s", res.code, res.stderr)
			}
			if st := statusJSON(t, lock); st.State != "held" || st.Holder == nil || st.Holder.PID != r.cmd.Process.Pid {
				t.Errorf("status while COMMAND's child lives: %+v; want held by proclock, pid %d", st, r.cmd.Process.Pid)
			}
			killAndAwait(t, child)
			if res := r.wait(); res.code != 0 {
				t.Errorf("proclock once the job is over: exit %d, want COMMAND's 0; stderr: %s", res.code, res.stderr)
			}
			if res := runProclock(t, line("run", "-n", lock, "--", "true")...); res.code != 0 {
				t.Errorf("run -n after the job: exit %d, want 0; stderr: %s", res.code, res.stderr)
			}
		})
	}
}
