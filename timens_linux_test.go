package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// timensTaker, given a mechanism and a path, makes one attempt at the lock
// without waiting and says how it went: "held" (a held error), "acquired"
// (it then releases), or the error.
var timensTaker = locktest.NewRole("timens-taker", func(args []string) int {
	l, err := proclock.Acquire(context.Background(), nativePlatform(proclock.Mechanism(args[0])), args[1], proclock.Options{})
	switch {
	case errors.Is(err, proclock.ErrHeld):
		fmt.Println("held")
	case err != nil:
		fmt.Println("error:", err)
	default:
		fmt.Println("acquired")
		l.Release()
	}
	return 0
})

// timeOffset is how far TestTimeNamespace sets a namespace's clock: more
// than a day, as a CRIU restore or OCI linux.timeOffsets may.
const timeOffset = "100000"

// inTimeNamespace runs cmd in a new time namespace whose clock (boottime
// or monotonic) is set timeOffset seconds ahead, through unshare(1), which
// execs it: its pid stays cmd's.
func inTimeNamespace(clock string, cmd *exec.Cmd) *exec.Cmd {
	wrapped := exec.Command("unshare", append([]string{"--time", "--" + clock, timeOffset, cmd.Path}, cmd.Args[1:]...)...)
	wrapped.Env = cmd.Env
	return wrapped
}

// skipWithoutTimeNamespaces skips t where this process may not make a time
// namespace: it needs CAP_SYS_ADMIN, linux 5.6 and util-linux's unshare
// 2.36.
func skipWithoutTimeNamespaces(t *testing.T) {
	t.Helper()
	out, err := exec.Command("unshare", "--time", "--boottime", "1", "true").CombinedOutput()
	if err != nil {
		t.Skipf("cannot make a time namespace here (CAP_SYS_ADMIN, linux 5.6 and unshare(1) with --time are needed): %v: %s", err, strings.TrimSpace(string(out)))
	}
}

// TestTimeNamespace: a holder and a taker on either side of a time
// namespace whose clock is 100000 s ahead, on both mechanisms and mixed.
// /proc/<pid>/stat gives a process's start time by the reader's boot
// clock, so each side used to read the other's record as a pid reused and
// take the lock from its live holder. Now:
//   - while the holder runs, the taker is refused, whichever side is in
//     the namespace;
//   - once the holder is killed, the taker takes the lock at once (its
//     death is seen across the namespace).
func TestTimeNamespace(t *testing.T) {
	skipWithoutTimeNamespaces(t)
	mechs := []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile}
	for _, clock := range []string{"boottime", "monotonic"} {
		for _, holderInside := range []bool{true, false} {
			for _, holderMech := range mechs {
				for _, takerMech := range mechs {
					inside := "taker inside"
					if holderInside {
						inside = "holder inside"
					}
					name := fmt.Sprintf("%s/%s/%s holds, %s takes", clock, inside, holderMech, takerMech)
					t.Run(name, func(t *testing.T) {
						testTimeNamespace(t, clock, holderInside, holderMech, takerMech)
					})
				}
			}
		}
	}
}

func testTimeNamespace(t *testing.T, clock string, holderInside bool, holderMech, takerMech proclock.Mechanism) {
	path := filepath.Join(t.TempDir(), "app.lock")
	holderCmd := handoffHolder.Command(string(holderMech), path)
	if holderInside {
		holderCmd = inTimeNamespace(clock, holderCmd)
	}
	var stderr strings.Builder
	holderCmd.Stderr = &stderr
	holder := locktest.Start(t, holderCmd)
	if line, err := holder.Line(); line != "held" {
		t.Fatalf("holder: %q, %v; stderr: %s", line, err, stderr.String())
	}

	// take makes one attempt from the taker's side: "held" or "acquired".
	take := func() string {
		t.Helper()
		if holderInside {
			l, err := proclock.Acquire(context.Background(), nativePlatform(takerMech), path, proclock.Options{})
			switch {
			case errors.Is(err, proclock.ErrHeld):
				return "held"
			case err != nil:
				t.Fatalf("taker outside: %v", err)
			}
			l.Release()
			return "acquired"
		}
		cmd := inTimeNamespace(clock, timensTaker.Command(string(takerMech), path))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("taker inside: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}

	for range 3 {
		if got := take(); got != "held" {
			t.Fatalf("beside a live holder across the time namespace: %s; want held", got)
		}
	}
	st, err := proclock.Inspect(context.Background(), nativePlatform(takerMech), path)
	if err != nil || st.State != proclock.StateHeld {
		t.Fatalf("Inspect beside a live holder across the time namespace = %+v, %v; want held", st, err)
	}
	if st.Holder != nil && st.Holder.PID != holder.Pid() {
		t.Errorf("Inspect names pid %d; want the holder, pid %d", st.Holder.PID, holder.Pid())
	}

	holder.Kill()
	if got := take(); got != "acquired" {
		t.Fatalf("the holder killed: %s; want the lock taken at once", got)
	}
}

// timensExec, given a boot-time offset in nanoseconds and a role's
// command line, makes a time namespace whose boot clock is that far
// ahead of the host's, and execs the command line in it, as that role:
// unshare(1) takes whole seconds, CRIU's offsets are to the nanosecond.
// The work is done in init, on the main thread (timensExecMain): the
// role's function only reports what failed there.
var timensExec = locktest.NewRole("timens-exec", func(args []string) int {
	fmt.Fprintln(os.Stderr, "timens-exec:", timensExecErr)
	return 2
})

// timensExecErr is why timensExecMain did not exec.
var timensExecErr error

// unshare(CLONE_NEWTIME) sets the namespace for the calling thread's
// children and exec, and /proc/self/timens_offsets is the main thread's
// (there is no such file per thread): the unshare, the offsets and the
// exec must all happen on the main thread, where Go runs init. Run from
// the role's function instead, they failed with "permission denied"
// whenever that goroutine ran on another thread.
func init() {
	if os.Getenv("PROCLOCK_TEST_ROLE") == "timens-exec" {
		timensExecErr = timensExecMain(locktest.Args())
	}
}

func timensExecMain(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("want an offset and a command line, got %q", args)
	}
	nanos, err := strconv.ParseInt(args[0], 10, 64)
	if err == nil {
		err = unix.Unshare(unix.CLONE_NEWTIME)
	}
	if err == nil {
		offsets := fmt.Sprintf("boottime %d %d", nanos/1e9, nanos%1e9)
		err = os.WriteFile("/proc/self/timens_offsets", []byte(offsets), 0)
	}
	if err == nil {
		env := handoffHolder.Environ(os.Environ())
		err = unix.Exec(args[1], args[1:], env)
	}
	return err
}

// TestTimeNamespaceFractionalOffset: a holder in a time namespace whose
// boot clock is set a fraction of a clock tick off (as a CRIU restore sets
// it) is judged alive from outside: the kernel rounds its start time after
// adding the offset, and the two readings of it may be a tick apart.
func TestTimeNamespaceFractionalOffset(t *testing.T) {
	skipWithoutTimeNamespaces(t)
	for _, offset := range []string{"5000000", "9990000", "100000009990000"} {
		for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
			t.Run(offset+"ns/"+string(mech)+" holds, file takes", func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "app.lock")
				cmd := timensExec.Command(append([]string{offset}, handoffHolder.Argv(string(mech), path)...)...)
				// stderr in a file, read once the holder is gone: no
				// goroutine of os/exec writes it while the test reads.
				stderr, err := os.CreateTemp(t.TempDir(), "stderr")
				if err != nil {
					t.Fatal(err)
				}
				defer stderr.Close()
				cmd.Stderr = stderr
				holder := locktest.Start(t, cmd)
				if line, err := holder.Line(); line != "held" {
					holder.Kill()
					b, _ := os.ReadFile(stderr.Name())
					t.Fatalf("holder: %q, %v; stderr: %s", line, err, b)
				}
				_, err = proclock.Acquire(context.Background(), nativePlatform(proclock.MechanismFile), path, proclock.Options{})
				if !errors.Is(err, proclock.ErrHeld) {
					t.Fatalf("beside a live holder %s ns off the host's boot clock: %v; want held", offset, err)
				}
			})
		}
	}
}
