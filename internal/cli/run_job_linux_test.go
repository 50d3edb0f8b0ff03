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
// child of COMMAND lives leaves the lock to that child: a second `run -n`
// is refused until the child exits, then succeeds. On both mechanisms, and
// with a taker of the other mechanism.
func TestRunKilledJobKeepsLock(t *testing.T) {
	for _, holder := range mechanisms {
		for _, taker := range mechanisms {
			t.Run(holder+" holds, "+taker+" takes", func(t *testing.T) {
				if taker == "file" {
					skipUnlessFileSeesFlock(t)
				}
				t.Parallel()
				lock := filepath.Join(t.TempDir(), "x.lock")
				r := startProclock(t, line("run", "--mechanism", holder, lock, jobScript(true))...)
				child := r.readPID()
				r.cmd.Process.Signal(syscall.SIGKILL)
				r.wait()

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
