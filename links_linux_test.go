package proclock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// One file, many names, and locks proclock did not take (issue 19, items
// 3, 4 and 5 of "Why"), with real processes: a hard link to a lock file
// excludes as the file itself does, on both mechanisms and mixed; the file
// mechanism keeps out of a file that a plain SQLite connection (python's
// sqlite3, SQLite's C library) has locked; and removing a SQLite holder's
// mark does not let a file-mechanism process in.

// linksRole is the test binary as a lock user in another process. Its
// arguments: the mode, the mechanism, the path, and for linksHold
// "remove" to set RemoveOnRelease.
var linksRole = locktest.NewRole("links", func(args []string) int { return linksUser(args) })

const (
	// linksHold takes the lock, prints "held", and on a line "release"
	// releases it and prints "released"; it exits when its input ends,
	// so that a test can keep it alive after its release.
	linksHold = "hold"
	// linksTry makes one Acquire without waiting and prints a
	// linksReport; a lock it gets is released at once.
	linksTry = "try"
)

// linksReport is what a linksTry user saw: errors classified where they
// happened, since an error's identity does not cross a pipe.
type linksReport struct {
	Acquired bool
	Held     bool // errors.Is(err, ErrHeld)
	Reason   string
	Err      string
}

func linksUser(args []string) int {
	if len(args) < 3 {
		fmt.Fprintf(os.Stderr, "links: want mode, mechanism, path; got %q\n", args)
		return 2
	}
	mode, p, path := args[0], nativePlatform(proclock.Mechanism(args[1])), args[2]
	opts := proclock.Options{RemoveOnRelease: len(args) > 3 && args[3] == "remove"}
	ctx := context.Background()
	switch mode {
	case linksHold:
		l, err := proclock.Acquire(ctx, p, path, opts)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("held")
		in := bufio.NewReader(os.Stdin)
		if line, _ := in.ReadString('\n'); strings.TrimSpace(line) == "release" {
			if err := l.Release(); err != nil {
				fmt.Println("error", err)
				return 1
			}
			fmt.Println("released")
		}
		io.Copy(io.Discard, in)
		return 0
	case linksTry:
		var r linksReport
		l, err := proclock.Acquire(ctx, p, path, opts)
		if err == nil {
			r.Acquired = true
			err = l.Release()
		}
		if err != nil {
			r.Err = err.Error()
		}
		r.Held = errors.Is(err, proclock.ErrHeld)
		if he, ok := errors.AsType[*proclock.HeldError](err); ok {
			r.Reason = he.Reason
		}
		json.NewEncoder(os.Stdout).Encode(r)
		return 0
	}
	fmt.Fprintf(os.Stderr, "links: no mode %q\n", mode)
	return 2
}

// linksHolder is a linksHold user in another process, holding the lock.
type linksHolder struct {
	t *testing.T
	c *locktest.Child
}

// holdElsewhere starts a process that takes the lock at path with mech
// and holds it.
func linksHoldElsewhere(t *testing.T, mech proclock.Mechanism, path string, remove bool) *linksHolder {
	t.Helper()
	args := []string{linksHold, string(mech), path}
	if remove {
		args = append(args, "remove")
	}
	c := locktest.Start(t, linksRole.Command(args...))
	if line, err := c.Line(); err != nil || line != "held" {
		t.Fatalf("the %s holder of %s: %q, %v", mech, path, line, err)
	}
	return &linksHolder{t: t, c: c}
}

// release has the holder release the lock and stay alive.
func (h *linksHolder) release() {
	h.t.Helper()
	fmt.Fprintln(h.c.Stdin, "release")
	if line, err := h.c.Line(); err != nil || line != "released" {
		h.t.Fatalf("the holder's release: %q, %v", line, err)
	}
}

// linksTryElsewhere has another process make one Acquire at path with
// mech, and returns what it saw.
func linksTryElsewhere(t *testing.T, mech proclock.Mechanism, path string) linksReport {
	t.Helper()
	out, err := linksRole.Command(linksTry, string(mech), path).Output()
	if err != nil {
		t.Fatalf("the %s user of %s: %v", mech, path, err)
	}
	var r linksReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the %s user of %s: %q: %v", mech, path, out, err)
	}
	return r
}

// takeHere takes the lock at path with mech in this process, at once, and
// lets it go.
func takeHere(t *testing.T, mech proclock.Mechanism, path string) {
	t.Helper()
	l, err := proclock.Acquire(context.Background(), nativePlatform(mech), path, proclock.Options{})
	if err != nil {
		t.Errorf("%s Acquire of %s: %v; want the lock", mech, filepath.Base(path), err)
		return
	}
	if err := l.Release(); err != nil {
		t.Errorf("%s Release of %s: %v", mech, filepath.Base(path), err)
	}
}

// TestHardLinkExcludes (issue 19, "Why" 3): a holder of a lock file, of
// either mechanism, keeps out a process of either mechanism that reaches
// the same file through a hard link; and once it lets go (and lives on),
// the lock is free through both names, for both mechanisms: what it
// leaves behind (its stamp in the other name) does not wedge the lock.
func TestHardLinkExcludes(t *testing.T) {
	for _, holder := range mechanisms {
		for _, other := range mechanisms {
			for _, remove := range []bool{false, true} {
				if remove && holder != proclock.MechanismSQLite {
					continue // the file mechanism removes its file anyway
				}
				name := fmt.Sprintf("%s_holder_%s_through_link", holder, other)
				if remove {
					name += "_remove"
				}
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					path, link := filepath.Join(dir, "x.lock"), filepath.Join(dir, "y.lock")
					h := linksHoldElsewhere(t, holder, path, remove)
					if err := os.Link(path, link); err != nil {
						t.Fatal(err)
					}
					before, _ := os.ReadFile(path)
					r := linksTryElsewhere(t, other, link)
					if r.Acquired || !r.Held {
						t.Errorf("a %s process through the hard link beside the %s holder: %+v; want held", other, holder, r)
					}
					if after, _ := os.ReadFile(path); string(after) != string(before) {
						t.Errorf("the held lock file changed: %q, was %q", after, before)
					}
					h.release()
					for _, mech := range mechanisms {
						for _, p := range []string{link, path} {
							if _, err := os.Lstat(p); err == nil || p == link {
								takeHere(t, mech, p)
							}
						}
					}
				})
			}
		}
	}
}

// pySQLiteHold is a python3 program on SQLite's own C library: it opens
// the database at argv[1] with no busy timeout, runs argv[2], prints "ok"
// or the error, and keeps its connection (and its locks) until its input
// ends.
const pySQLiteHold = `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    c.execute(sys.argv[2])
    print("ok", flush=True)
except sqlite3.Error as e:
    print(e, flush=True)
sys.stdin.read()
`

// pythonHolds starts python3 running sql on the database at path, and
// returns its answer; the connection lives until the test ends.
func pythonHolds(t *testing.T, path, sql string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 (with its sqlite3 module, SQLite's C library) is not installed")
	}
	c := locktest.Start(t, exec.Command(py, "-c", pySQLiteHold, path, sql))
	line, err := c.Line()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	return line
}

// TestFileMechanismSeesPlainSQLiteLock (issue 19, "Why" 4): python3's
// BEGIN EXCLUSIVE on a free lock's file keeps the file mechanism out, as
// it keeps the SQLite mechanism out: the file is not stamped, converted
// or removed, so a SQLite-mechanism process finds python's lock and not a
// new file beside it. IsHeld of both mechanisms says held.
func TestFileMechanismSeesPlainSQLiteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	takeHere(t, proclock.MechanismSQLite, path) // a free lock: its database
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if answer := pythonHolds(t, path, "BEGIN EXCLUSIVE"); answer != "ok" {
		t.Fatalf("python3's BEGIN EXCLUSIVE on the free lock: %q", answer)
	}
	r := linksTryElsewhere(t, proclock.MechanismFile, path)
	if r.Acquired || !r.Held {
		t.Errorf("a file-mechanism process beside python's exclusive lock: %+v; want held", r)
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Errorf("the lock file python holds changed: %d bytes, %v; want its %d bytes as they were", len(after), err, len(before))
	}
	if r := linksTryElsewhere(t, proclock.MechanismSQLite, path); r.Acquired || !r.Held {
		t.Errorf("a SQLite-mechanism process after the file-mechanism one: %+v; want held", r)
	}
	for _, mech := range mechanisms {
		held, err := proclock.IsHeld(context.Background(), nativePlatform(mech), path)
		if err != nil || !held {
			t.Errorf("%s IsHeld beside python's exclusive lock: %v, %v; want held", mech, held, err)
		}
	}
	st, err := proclock.Inspect(context.Background(), nativePlatform(proclock.MechanismFile), path)
	if err != nil || st.State != proclock.StateHeld {
		t.Errorf("file-mechanism Inspect beside python's exclusive lock: %+v, %v; want held", st, err)
	}
}

// TestRemovedMarkKeepsFileOut (issue 19, "Why" 5): `rm <path>.holder`
// under a SQLite holder does not let a file-mechanism process in: it sees
// the holder's lock on the file itself.
func TestRemovedMarkKeepsFileOut(t *testing.T) {
	for _, remove := range []bool{false, true} {
		t.Run(fmt.Sprintf("remove=%v", remove), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			h := linksHoldElsewhere(t, proclock.MechanismSQLite, path, remove)
			if err := os.Remove(path + ".holder"); err != nil {
				t.Fatal(err)
			}
			if r := linksTryElsewhere(t, proclock.MechanismFile, path); r.Acquired || !r.Held {
				t.Errorf("a file-mechanism process beside the SQLite holder whose mark was removed: %+v; want held", r)
			}
			if r := linksTryElsewhere(t, proclock.MechanismSQLite, path); r.Acquired || !r.Held {
				t.Errorf("a SQLite-mechanism process: %+v; want held", r)
			}
			h.release()
			for _, mech := range mechanisms {
				takeHere(t, mech, path)
			}
		})
	}
}

// emfileRole is the test binary as a lock user that runs out of file
// descriptors: its arguments are the mechanism, a free lock's path and a
// held lock's path. For each k from 0 to emfileMax, with RLIMIT_NOFILE set
// so that only k more descriptors can be opened, it makes one Acquire of
// the free lock and one Inspect of the held one, and prints an
// emfileReport of each.
var emfileRole = locktest.NewRole("emfile", func(args []string) int { return emfileUser(args) })

// emfileMax is the most descriptors an attempt is given: enough for each
// mechanism to take the lock.
const emfileMax = 12

// emfileReport is what one round of an emfile user saw.
type emfileReport struct {
	K        int
	Acquired bool
	// Of the Acquire's error: errors.Is with syscall.EMFILE, ErrHeld,
	// ErrNotLockFile.
	EMFILE, Held, NotLockFile bool
	Err                       string
	// Left is what the round left at the free lock's path, once the
	// limit was lifted: "" for nothing, or what is wrong.
	Left string
	// Inspect of the held lock: its state, and whether its error
	// matches EMFILE.
	State      proclock.State
	InspEMFILE bool
	InspErr    string
}

func emfileUser(args []string) int {
	mech := proclock.Mechanism(args[0])
	p, free, held := nativePlatform(mech), args[1], args[2]
	ctx := context.Background()
	// Everything this process opens once (the poller, its identity, the
	// SQLite instance) is opened before the limit.
	if _, err := proclock.Inspect(ctx, p, held); err != nil {
		fmt.Println("error", err)
		return 1
	}
	if l, err := proclock.Acquire(ctx, p, free, proclock.Options{RemoveOnRelease: true}); err == nil {
		l.Release()
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println("error", err)
		return 1
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	next := f.Fd() // the lowest free descriptor
	f.Close()
	limit := func(n uint64) {
		l := lim
		l.Cur = n
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			panic(err)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for k := range emfileMax + 1 {
		r := emfileReport{K: k}
		limit(uint64(next) + uint64(k))
		l, err := proclock.Acquire(ctx, p, free, proclock.Options{RemoveOnRelease: true})
		st, ierr := proclock.Inspect(ctx, p, held)
		limit(lim.Cur)
		if err == nil {
			r.Acquired = true
			err = l.Release()
		}
		if err != nil {
			r.Err = err.Error()
			r.EMFILE = errors.Is(err, syscall.EMFILE)
			r.Held = errors.Is(err, proclock.ErrHeld)
			r.NotLockFile = errors.Is(err, proclock.ErrNotLockFile)
		}
		r.State = st.State
		if ierr != nil {
			r.InspErr = ierr.Error()
			r.InspEMFILE = errors.Is(ierr, syscall.EMFILE)
		}
		r.Left = emfileLeft(ctx, p, free)
		enc.Encode(r)
	}
	return 0
}

// emfileLeft says what is wrong at a lock's path that an attempt left: ""
// when nothing is there but, for SQLite, the free lock's database.
func emfileLeft(ctx context.Context, p *platform.Platform, path string) string {
	var left []string
	for _, name := range []string{path, path + ".holder", path + ".stale"} {
		if _, err := os.Lstat(name); err == nil && (name != path || p.SQLite == nil) {
			left = append(left, filepath.Base(name))
		}
	}
	if st, err := proclock.Inspect(ctx, p, path); err != nil || (st.State != proclock.StateAbsent && st.State != proclock.StateFree) {
		left = append(left, fmt.Sprintf("the lock is %s (%v)", st.State, err))
	}
	for _, name := range []string{path, path + ".holder", path + ".stale"} {
		os.Remove(name) // for the next round
	}
	return strings.Join(left, ", ")
}

// TestOutOfDescriptors (issue 19, "Why" 9): an attempt that runs out of
// file descriptors (EMFILE, as under `ulimit -n 5`) fails with an error
// matching syscall.EMFILE, never held and never "not a lock file", and
// leaves nothing behind; Inspect of a live lock then says held or fails
// with EMFILE, never foreign or free. Each descriptor count from none to
// enough is tried, in another process (the limit is the process's).
func TestOutOfDescriptors(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			dir := t.TempDir()
			free, held := filepath.Join(dir, "free.lock"), filepath.Join(dir, "held.lock")
			l, err := proclock.Acquire(context.Background(), nativePlatform(mech), held, proclock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			c := locktest.Start(t, emfileRole.Command(string(mech), free, held))
			took := false
			for k := range emfileMax + 1 {
				line, err := c.Line()
				if err != nil {
					t.Fatalf("round %d: %v", k, err)
				}
				var r emfileReport
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("round %d: %q: %v", k, line, err)
				}
				took = took || r.Acquired
				if !r.Acquired && (!r.EMFILE || r.Held || r.NotLockFile) {
					t.Errorf("%d descriptors: Acquire of a free lock: %s (EMFILE %v, held %v, not a lock file %v); want an error matching EMFILE", k, r.Err, r.EMFILE, r.Held, r.NotLockFile)
				}
				if r.Left != "" {
					t.Errorf("%d descriptors: left behind: %s", k, r.Left)
				}
				if r.State != proclock.StateHeld && !r.InspEMFILE {
					t.Errorf("%d descriptors: Inspect of a held lock: %s, %s; want held, or an error matching EMFILE", k, r.State, r.InspErr)
				}
			}
			if !took {
				t.Errorf("no round took the lock, even with %d descriptors", emfileMax)
			}
		})
	}
}

// releaseElsewhere is the check of issue 19's "Why" 7, once the path of a
// lock that this process holds (l, of mechanism a, in directory was) names
// the lock of another process (holder, of mechanism b, at now): l's
// Release acts on the files it locked, and not on the other holder's,
// which still holds; and the lock l held is free for everyone.
func releaseElsewhere(t *testing.T, l *proclock.Lock, b proclock.Mechanism, was, now string) {
	t.Helper()
	if err := l.Release(); err != nil {
		t.Errorf("Release: %v", err)
	}
	if b == proclock.MechanismSQLite {
		if _, err := os.Lstat(now + ".holder"); err != nil {
			t.Errorf("the other holder's mark: %v", err)
		}
	}
	for _, mech := range mechanisms {
		if r := linksTryElsewhere(t, mech, now); r.Acquired || !r.Held {
			t.Errorf("a %s process at the other holder's lock after the Release: %+v; want held", mech, r)
		}
	}
	if _, err := os.Lstat(was + ".holder"); err == nil {
		t.Errorf("the released lock's mark is left")
	}
	for _, mech := range mechanisms {
		takeHere(t, mech, was)
	}
}

// linksCases are the holders of the lock this process releases (its
// mechanism, RemoveOnRelease) and the mechanisms of the other holder.
func linksCases(t *testing.T, run func(t *testing.T, a proclock.Mechanism, remove bool, b proclock.Mechanism)) {
	for _, a := range mechanisms {
		for _, remove := range []bool{false, true} {
			if remove && a != proclock.MechanismSQLite {
				continue
			}
			for _, b := range mechanisms {
				name := fmt.Sprintf("%s_then_%s", a, b)
				if remove {
					name = fmt.Sprintf("%s(remove)_then_%s", a, b)
				}
				t.Run(name, func(t *testing.T) { run(t, a, remove, b) })
			}
		}
	}
}

// TestReleaseAfterChdir (issue 19, "Why" 7): a holder of a relative path
// that changed its working directory releases the lock it took, not the
// one the relative path names now.
func TestReleaseAfterChdir(t *testing.T) {
	linksCases(t, func(t *testing.T, a proclock.Mechanism, remove bool, b proclock.Mechanism) {
		base := t.TempDir()
		one, two := filepath.Join(base, "one"), filepath.Join(base, "two")
		for _, d := range []string{one, two} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		t.Chdir(one)
		l, err := proclock.Acquire(context.Background(), nativePlatform(a), "x.lock", proclock.Options{RemoveOnRelease: remove})
		if err != nil {
			t.Fatal(err)
		}
		t.Chdir(two)
		linksHoldElsewhere(t, b, filepath.Join(two, "x.lock"), false)
		releaseElsewhere(t, l, b, filepath.Join(one, "x.lock"), filepath.Join(two, "x.lock"))
	})
}

// TestReleaseThroughFlippedSymlink (issue 19, "Why" 7): a holder of a
// path through a symlinked directory (current -> v1) that was flipped
// (current -> v2) while it held releases the lock in v1, not the one in v2.
func TestReleaseThroughFlippedSymlink(t *testing.T) {
	linksCases(t, func(t *testing.T, a proclock.Mechanism, remove bool, b proclock.Mechanism) {
		base := t.TempDir()
		for _, d := range []string{"v1", "v2"} {
			if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		current := filepath.Join(base, "current")
		if err := os.Symlink("v1", current); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(current, "x.lock")
		l, err := proclock.Acquire(context.Background(), nativePlatform(a), path, proclock.Options{RemoveOnRelease: remove})
		if err != nil {
			t.Fatal(err)
		}
		// Flipped as deployments do it: a new link renamed over the old.
		if err := os.Symlink("v2", current+".new"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(current+".new", current); err != nil {
			t.Fatal(err)
		}
		linksHoldElsewhere(t, b, path, false)
		releaseElsewhere(t, l, b, filepath.Join(base, "v1", "x.lock"), path)
	})
}
