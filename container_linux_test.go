package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// containerHolder, given a mechanism and a path, is a holder in a
// container of its own: TestContainerHolder starts it in new pid, UTS and
// mount namespaces, and it names its host "container", mounts its own
// /proc, and then serves as a handoff holder (takes the lock, says "held",
// keeps it until killed).
var containerHolder = locktest.NewRole("container-holder", serveContainerHolder)

// containerHost is the host name of TestContainerHolder's container.
const containerHost = "container"

func serveContainerHolder(args []string) int {
	err := unix.Sethostname([]byte(containerHost))
	if err == nil {
		// Private mounts first, so that the new /proc stays in here.
		err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	}
	if err == nil {
		err = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "container set-up:", err)
		return 2
	}
	return holdUntilKilled(proclock.Mechanism(args[0]), args[1])
}

// TestContainerHolder: a holder in a container (its own pid namespace and
// host name, on a directory it shares with the host) as the host sees it
// (docs/installation.md, "Containers and pid namespaces"):
//   - it is named as it names itself: pid 1 on "container", of another pid
//     namespace;
//   - SQLite: the lock is the kernel's, container or not, so it keeps the
//     host out, and the host takes it the moment the holder is killed;
//   - file mechanism: the killed holder's lock file cannot be judged from
//     the host and is never reclaimed; removed by hand, the lock is free;
//   - a SQLite holder's mark stays when it is killed, and keeps
//     file-mechanism processes out until a SQLite process takes the lock.
func TestContainerHolder(t *testing.T) {
	for _, tc := range []struct {
		name         string
		holder, here proclock.Mechanism
	}{
		{"sqlite", proclock.MechanismSQLite, proclock.MechanismSQLite},
		{"file", proclock.MechanismFile, proclock.MechanismFile},
		{"sqlite mark", proclock.MechanismSQLite, proclock.MechanismFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "app.lock")
			holder := startContainerHolder(t, tc.holder, path)
			here := nativePlatform(tc.here)
			self, err := here.Process.Self()
			if err != nil {
				t.Fatal(err)
			}

			_, err = proclock.Acquire(ctx, here, path, proclock.Options{})
			held, ok := errors.AsType[*proclock.HeldError](err)
			if !ok || held.Holder == nil {
				t.Fatalf("beside the container's holder: %v; want held, holder named", err)
			}
			if h := *held.Holder; h.Host != containerHost || h.PID != 1 || h.PIDNamespace == self.PIDNamespace || h.PIDNamespace == 0 {
				t.Fatalf("holder %+v; want pid 1 on %q, of another pid namespace than %d", h, containerHost, self.PIDNamespace)
			}

			holder.Kill()
			_, err = proclock.Acquire(ctx, here, path, proclock.Options{})
			if tc.name == "sqlite" {
				if err != nil {
					t.Fatalf("SQLite, the container's holder killed: %v; want the lock at once", err)
				}
				return
			}
			if !errors.Is(err, proclock.ErrHeld) {
				t.Fatalf("file mechanism, the container's holder killed: %v; want still held", err)
			}
			if tc.name == "file" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else {
				l, err := proclock.Acquire(ctx, nativePlatform(proclock.MechanismSQLite), path, proclock.Options{})
				if err != nil {
					t.Fatalf("SQLite, the container's holder killed: %v; want the lock at once", err)
				}
				l.Release()
			}
			l, err := proclock.Acquire(ctx, here, path, proclock.Options{})
			if err != nil {
				t.Fatalf("file mechanism, the leftover cleared: %v; want the lock", err)
			}
			l.Release()
		})
	}
}

// startContainerHolder starts this test binary as a holder of path in
// new pid, UTS and mount namespaces, and returns once it holds the lock;
// it skips the test where namespaces cannot be made (they need
// CAP_SYS_ADMIN).
func startContainerHolder(t *testing.T, mech proclock.Mechanism, path string) *locktest.Child {
	t.Helper()
	cmd := containerHolder.Command(string(mech), path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWUTS | unix.CLONE_NEWNS}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	c, err := locktest.TryStart(t, cmd)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
			t.Skipf("cannot make pid, UTS and mount namespaces here (CAP_SYS_ADMIN, or a sandbox that forbids them): %v", err)
		}
		t.Fatal(err)
	}
	line, err := c.Line()
	if line != "held" {
		t.Fatalf("container holder: %q, %v; stderr: %s", line, err, stderr.String())
	}
	return c
}
