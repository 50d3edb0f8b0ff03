package proclock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// Security (issue 5, item 5) with real processes, some of them another
// user: a lock directory this process cannot write, another user against
// our locks, lock descriptors and child processes, and EPERM on a lock
// file. The tests run as root here; permission bits do not bind root, so
// the process that must be refused runs as nobody (a re-executed test
// binary with SysProcAttr.Credential).

// secHelper is the test binary as a helper process of these tests; its
// first argument is the mode.
var secHelperRole = locktest.NewRole("security", func(args []string) int { return secHelper(args[0], args[1:]) })

// Helper modes.
const (
	secHoldAndSpawn = "hold-and-spawn" // mech path: take the lock, start a grandchild (locktest.Block), print "ready <pid>", wait for stdin to close
	secTry          = "try"            // mech path: one Acquire and one Inspect, reported as JSON (secTryReport)
	secShare        = "share"          // path: hold a SHARED lock through a read-only connection until stdin closes
	secWait         = "wait"           // mech path: a waiting Acquire (a minute at most), then "held" and Release, or the error
)

// secTryReport is what a secTry helper saw: errors classified where they
// happened, since an error's identity does not cross a pipe.
type secTryReport struct {
	Acquired   bool
	Held       bool // errors.Is(err, ErrHeld)
	HolderPID  int
	Permission bool // errors.Is(err, fs.ErrPermission)
	PathError  bool // errors.As(err, **fs.PathError)
	Err        string
	State      proclock.State
	InspectPID int // Inspect's holder
	InspectErr string
	UID        int
}

func secHelper(mode string, args []string) int {
	ctx := context.Background()
	switch mode {
	case secHoldAndSpawn:
		l, err := proclock.Acquire(ctx, nativePlatform(proclock.Mechanism(args[0])), args[1], proclock.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer l.Release()
		child := locktest.Block.Command()
		child.Stdin = os.Stdin // the one file handed on on purpose
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("ready", child.Process.Pid)
		io.Copy(io.Discard, os.Stdin)
		return 0
	case secTry:
		var r secTryReport
		r.UID = os.Geteuid()
		l, err := proclock.Acquire(ctx, nativePlatform(proclock.Mechanism(args[0])), args[1], proclock.Options{})
		if err == nil {
			r.Acquired = true
			l.Release()
		} else {
			r.Err = err.Error()
			r.Held = errors.Is(err, proclock.ErrHeld)
			r.Permission = errors.Is(err, fs.ErrPermission)
			_, r.PathError = errors.AsType[*fs.PathError](err)
			if he, ok := errors.AsType[*proclock.HeldError](err); ok && he.Holder != nil {
				r.HolderPID = he.Holder.PID
			}
		}
		st, err := proclock.Inspect(ctx, nativePlatform(proclock.Mechanism(args[0])), args[1])
		r.State = st.State
		if st.Holder != nil {
			r.InspectPID = st.Holder.PID
		}
		if err != nil {
			r.InspectErr = err.Error()
		}
		json.NewEncoder(os.Stdout).Encode(r)
		return 0
	case secWait:
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		l, err := proclock.Acquire(ctx, nativePlatform(proclock.Mechanism(args[0])), args[1], proclock.Options{Wait: true})
		if err != nil {
			fmt.Println(err)
			return 0
		}
		fmt.Println("held")
		if err := l.Release(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	case secShare:
		conn, err := sqlite3.OpenFlags(args[0], sqlite3.OPEN_READONLY)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer conn.Close()
		// A deferred transaction holds its SHARED lock from the first
		// read until it ends.
		if err := conn.Exec("BEGIN; SELECT count(*) FROM sqlite_master;"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("shared")
		io.Copy(io.Discard, os.Stdin)
		conn.Exec("COMMIT")
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// secOther says how to run a process as another user: nobody, when this
// process is root. Without root there is no other user to be; ok is false.
func secOther(t *testing.T) (cred *syscall.Credential, ok bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, false
	}
	uid, gid := 65534, 65534
	if u, err := user.Lookup("nobody"); err == nil {
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, true
}

// secSharedDir is a new directory that other users may enter and read.
func secSharedDir(t *testing.T) string { return locktest.SharedDir(t) }

// secExe is a copy of the test binary that another user may run: the go
// tool's build directory is private to this user.
func secExe(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return locktest.Self()
	}
	return locktest.SharedCopy(t, locktest.Self())
}

// secCommand is the test binary (exe) as a helper in mode, run as cred's
// user when cred is set.
func secCommand(exe string, cred *syscall.Credential, mode string, args ...string) *exec.Cmd {
	cmd := secHelperRole.CommandAt(exe, append([]string{mode}, args...)...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return cmd
}

// secTryAs runs a secTry helper and returns its report.
func secTryAs(t *testing.T, exe string, cred *syscall.Credential, mech proclock.Mechanism, path string) secTryReport {
	t.Helper()
	out := locktest.Output(t, secCommand(exe, cred, secTry, string(mech), path))
	var r secTryReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("helper said %q: %v", out, err)
	}
	if cred != nil && r.UID != int(cred.Uid) {
		t.Fatalf("helper ran as uid %d; want %d", r.UID, cred.Uid)
	}
	return r
}

// TestUnwritableLockDirectory: a lock directory this process may not write
// gives a clear permission error, a *fs.PathError, for both mechanisms:
// not a held lock, not a panic, and nothing is created.
func TestUnwritableLockDirectory(t *testing.T) {
	cred, other := secOther(t)
	exe := secExe(t)
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			dir := secSharedDir(t)
			if !other {
				// Our own directory, made read-only: binds a non-root user.
				if err := os.Chmod(dir, 0o555); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(dir, 0o755) })
			}
			r := secTryAs(t, exe, cred, mech, filepath.Join(dir, "x.lock"))
			if r.Acquired || r.Held || !r.Permission || !r.PathError {
				t.Errorf("Acquire in an unwritable directory: %+v; want a *fs.PathError matching fs.ErrPermission, not held", r)
			}
			secOnly(t, dir)
		})
	}
}

// TestOtherUserAgainstOurLock: another local user can see that our lock
// is held, and by whom (a held error), but cannot take it, neither while
// we hold it nor once we let go: the SQLite database stays ours (0644
// under umask 022), which they cannot open for writing, so Acquire tells
// them so (a permission error, at once, rather than a wait that could
// never end); a lock file, once removed, leaves a directory that is not
// theirs to create in.
func TestOtherUserAgainstOurLock(t *testing.T) {
	cred, other := secOther(t)
	if !other {
		t.Skip("needs root to run a process as another user")
	}
	defer syscall.Umask(syscall.Umask(0o022))
	exe := secExe(t)
	ctx := context.Background()
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			dir := secSharedDir(t)
			path := filepath.Join(dir, "x.lock")
			l, err := proclock.Acquire(ctx, nativePlatform(mech), path, proclock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := secTryAs(t, exe, cred, mech, path)
			if r.Acquired || r.State != proclock.StateHeld || r.InspectPID != os.Getpid() {
				t.Errorf("another user against our held lock: %+v; want not acquired, Inspect held by pid %d", r, os.Getpid())
			}
			// Read access is enough to learn it is held, and by whom
			// (docs/security.md): a held error, not a permission error.
			if !r.Held || r.HolderPID != os.Getpid() {
				t.Errorf("another user's Acquire of our held lock: %+v; want held by pid %d", r, os.Getpid())
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			r = secTryAs(t, exe, cred, mech, path)
			if r.Acquired || r.Held || !r.Permission {
				t.Errorf("another user against our released lock: %+v; want a permission error", r)
			}
			if mech == proclock.MechanismFile {
				// Our holder killed with kill -9: its stale file is
				// not theirs to reclaim from a directory they cannot
				// write.
				secDeadStamp(t, path)
				before := secFileState(t, path)
				r = secTryAs(t, exe, cred, mech, path)
				if r.Acquired || r.Held || !r.Permission || r.State != proclock.StateStale {
					t.Errorf("another user against our stale lock file: %+v; want a permission error, Inspect stale", r)
				}
				if after := secFileState(t, path); after != before {
					t.Errorf("our stale lock file changed: %s; was %s", after, before)
				}
			}
		})
	}
}

// TestReadAccessBlocksSQLite: anyone who may read a SQLite lock file can
// keep it from being taken (denial of service): a read-only connection in
// a read transaction holds a SHARED lock, and the holder's EXCLUSIVE lock
// waits for it. This is why docs/security.md recommends a lock directory
// only its user can read into, such as $XDG_RUNTIME_DIR.
func TestReadAccessBlocksSQLite(t *testing.T) {
	cred, _ := secOther(t) // nil without root: the same user shows it too
	defer syscall.Umask(syscall.Umask(0o022))
	exe := secExe(t)
	ctx := context.Background()
	p := nativePlatform(proclock.MechanismSQLite)
	path := filepath.Join(secSharedDir(t), "x.lock")
	l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Release() // the database file stays, 0644

	cmd := secCommand(exe, cred, secShare, path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	sharer := locktest.Start(t, cmd)
	defer sharer.End()
	if line, err := sharer.Line(); line != "shared" {
		t.Fatalf("sharer said %q, %v; stderr: %s", line, err, stderr.String())
	}

	l, err = proclock.Acquire(ctx, p, path, proclock.Options{})
	if err == nil {
		l.Release()
		t.Fatal("Acquire took the lock beside a reader's SHARED lock")
	}
	if he, ok := errors.AsType[*proclock.HeldError](err); !ok || he.Holder != nil {
		t.Fatalf("Acquire beside a reader = %v; want held, holder unknown", err)
	}
	// IsHeld, itself a SHARED probe, sees no holder: only Acquire decides.
	if held, err := proclock.IsHeld(ctx, p, path); err != nil || held {
		t.Fatalf("IsHeld beside a reader = %v, %v; want free", held, err)
	}

	if err := sharer.End(); err != nil {
		t.Fatalf("sharer: %v; stderr: %s", err, stderr.String())
	}
	l, err = proclock.Acquire(ctx, p, path, proclock.Options{})
	if err != nil {
		t.Fatalf("Acquire once the reader is gone: %v", err)
	}
	l.Release()
}

// TestLockNotInheritedByChildren: descriptors leaking into child processes
// would keep a lock held after its holder dies. A holder starts a child
// that outlives it, and is killed with SIGKILL: the child has no file of
// the lock open, and the lock is free for the next Acquire while the child
// still runs (SQLite: at once; file: its pid is gone).
func TestLockNotInheritedByChildren(t *testing.T) {
	ctx := context.Background()
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "x.lock")
			cmd := secCommand(locktest.Self(), nil, secHoldAndSpawn, string(mech), path)
			// Not a pipe of Start's: Wait would close it, and the
			// grandchild, which reads it, would leave before it is looked at.
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdinW.Close() // lets the grandchild go
			cmd.Stdin = stdinR
			var stderr strings.Builder
			cmd.Stderr = &stderr
			holder := locktest.Start(t, cmd)
			stdinR.Close()
			line, err := holder.Line()
			f := strings.Fields(line)
			if len(f) != 2 || f[0] != "ready" {
				t.Fatalf("holder said %q, %v; stderr: %s", line, err, stderr.String())
			}
			grandchild, _ := strconv.Atoi(f[1])
			defer syscall.Kill(grandchild, syscall.SIGKILL) // in case the test fails before it goes

			if held, err := proclock.IsHeld(ctx, nativePlatform(mech), path); err != nil || !held {
				t.Fatalf("IsHeld while the holder runs = %v, %v; want held", held, err)
			}
			// The check sees a lock file when one is open: the holder's.
			if n := len(secOpenLockFiles(t, holder.Pid(), path)); n == 0 {
				t.Fatalf("the holder has no file of the lock open: the check proves nothing")
			}
			if open := secOpenLockFiles(t, grandchild, path); len(open) != 0 {
				t.Fatalf("the holder's child has the lock's files open: %q", open)
			}

			holder.Cmd.Process.Signal(syscall.SIGKILL)
			holder.Wait()
			if ws, ok := holder.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("holder ended with %v; want killed by SIGKILL", holder.Cmd.ProcessState)
			}
			l, err := proclock.Acquire(ctx, nativePlatform(mech), path, proclock.Options{})
			if err != nil {
				t.Fatalf("Acquire after the holder's death, while its child runs: %v", err)
			}
			if state := secProcState(t, grandchild); state == "" || state == "Z" {
				t.Fatalf("the child is gone (state %q): the test proves nothing", state)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// secProcState is pid's state letter from /proc/<pid>/stat ("Z" for a
// zombie), or "" when there is no such process.
func secProcState(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	// The state follows the command name, which is in parentheses and
	// may hold anything but ends at the last ')'.
	_, rest, _ := strings.Cut(string(data[strings.LastIndexByte(string(data), ')'):]), " ")
	state, _, _ := strings.Cut(rest, " ")
	return state
}

// secOpenLockFiles lists what pid has open of the lock at path (the lock's
// file, .holder, journals), from /proc/<pid>/fd.
func secOpenLockFiles(t *testing.T, pid int, path string) []string {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatalf("%s lists nothing, not even stdin", fdDir)
	}
	var open []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err == nil && strings.HasPrefix(target, path) {
			open = append(open, e.Name()+" -> "+target)
		}
	}
	return open
}

// TestPermissionDeniedIsNotDeath: EPERM read as a dead holder would let
// anyone who cannot read a lock file reclaim it. A lock file this user may
// not read (mode 000, another user's) gives a permission error from
// Acquire and "inaccessible" from Inspect, and is left as it was, though
// the directory would let it be removed and it names a dead holder.
func TestPermissionDeniedIsNotDeath(t *testing.T) {
	cred, _ := secOther(t) // without root, our own mode-000 file binds us
	exe := secExe(t)
	ctx := context.Background()
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			dir := secSharedDir(t)
			if err := os.Chmod(dir, 0o777); err != nil { // a wrong reclaim would succeed
				t.Fatal(err)
			}
			path := filepath.Join(dir, "x.lock")
			switch mech {
			case proclock.MechanismFile:
				secDeadStamp(t, path)
			case proclock.MechanismSQLite:
				l, err := proclock.Acquire(ctx, nativePlatform(mech), path, proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				l.Release()
			}
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
			before := secFileState(t, path)
			r := secTryAs(t, exe, cred, mech, path)
			if r.Acquired || r.Held || !r.Permission {
				t.Errorf("Acquire of an unreadable lock file: %+v; want a permission error, not held", r)
			}
			if r.State != proclock.StateInaccessible || r.InspectErr != "" {
				t.Errorf("Inspect of an unreadable lock file: %s (%s); want inaccessible", r.State, r.InspectErr)
			}
			if after := secFileState(t, path); after != before {
				t.Errorf("the unreadable lock file changed: %s; was %s", after, before)
			}
			secOnly(t, dir, "x.lock")
		})
	}
}

// secFileState describes the file at path: its inode, mode, size and
// bytes, read as this (root) process.
func secFileState(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	var ino uint64
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrPermission) {
		t.Fatal(err)
	}
	return fmt.Sprintf("ino %d %v %d %q", ino, info.Mode(), info.Size(), data)
}
