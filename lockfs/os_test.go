package lockfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/lockfs"
)

func TestOSValuesAreEqual(t *testing.T) {
	// In-process turns are keyed by FS value: two calls must name one world.
	if lockfs.OS() != lockfs.OS() {
		t.Fatal("OS() != OS(): locks taken through two of them would not share turns")
	}
}

func TestFileIDHardLinks(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	a, b, other := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "other")
	writeFile(t, fsys, a, "a")
	writeFile(t, fsys, other, "other")
	if err := fsys.Link(a, b); err != nil {
		t.Fatalf("Link: %v", err)
	}

	want := mustFileID(t, fsys, a)
	ids := map[string]lockfs.FileID{
		"FileID(b)":                 mustFileID(t, fsys, b),
		"FileIDOf(Open(a))":         mustFileIDOf(t, fsys, mustOpen(t, openRead(fsys), a)),
		"FileIDOf(Open(b))":         mustFileIDOf(t, fsys, mustOpen(t, openRead(fsys), b)),
		"FileIDOf(OpenNoFollow(b))": mustFileIDOf(t, fsys, mustOpen(t, fsys.OpenNoFollow, b)),
	}
	for name, id := range ids {
		if !identical(id, want) {
			t.Errorf("%s = %+v, want FileID(a) = %+v", name, id, want)
		}
	}
	if id := mustFileID(t, fsys, other); id.Same(want) {
		t.Errorf("another file has the same identity as a: %+v", id)
	}
}

func TestFileIDOfOpenFileDiffersFromRecreated(t *testing.T) {
	// While a file is open its inode cannot be reused, so comparing an open
	// file with the name is exact even without birth times.
	fsys := lockfs.OS()
	p := filepath.Join(t.TempDir(), "lock")
	writeFile(t, fsys, p, "old")
	old := mustOpen(t, openRead(fsys), p)
	if err := fsys.Remove(p); err != nil {
		t.Fatal(err) // on windows too: the FS opens files sharing delete
	}
	if _, err := fsys.FileID(p); err == nil {
		// Windows without POSIX delete semantics (before 10 1709, or
		// not NTFS) keeps the name until the last handle is closed.
		locktest.SkipOnWine(t, locktest.WineDeletePending)
		t.Skip("this volume keeps a removed file's name while the file is open")
	}
	writeFile(t, fsys, p, "new")

	if openID, nameID := mustFileIDOf(t, fsys, old), mustFileID(t, fsys, p); openID.Same(nameID) {
		t.Errorf("the removed open file and its successor share the identity %+v", nameID)
	}
}

func TestFileIDRecreated(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	p := filepath.Join(dir, "lock")
	writeFile(t, fsys, p, "")
	before := mustFileID(t, fsys, p)
	if before.HasBirth {
		waitForLaterBirth(t, fsys, dir, before.Birth)
	}
	if err := fsys.Remove(p); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fsys, p, "")
	after := mustFileID(t, fsys, p)

	switch {
	case !after.Same(before):
		// The identity changed, which is the point.
	case !before.HasBirth || !after.HasBirth:
		t.Skipf("the filesystem reused inode %d and records no birth time: "+
			"identities by name cannot tell the two files apart here", after.Ino)
	default:
		t.Errorf("re-created file has the identity of the removed one: %+v", after)
	}
}

// waitForLaterBirth returns once a file created in dir is born after t0.
// Filesystems stamp births from a coarse clock (a jiffy on Linux), so two
// files created within one tick share a birth time; this waits out the
// tick by creating files rather than by sleeping.
func waitForLaterBirth(t *testing.T, fsys lockfs.FS, dir string, t0 time.Time) {
	t.Helper()
	probe := filepath.Join(dir, "clock-probe")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		writeFile(t, fsys, probe, "")
		id := mustFileID(t, fsys, probe)
		if err := fsys.Remove(probe); err != nil {
			t.Fatal(err)
		}
		if !id.HasBirth || id.Birth.After(t0) {
			return
		}
	}
	t.Fatalf("no file created in %s was born after %v within 10s", dir, t0)
}

func TestFileIDDoesNotFollowSymlinks(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	needSymlinks(t, fsys, dir)
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	writeFile(t, fsys, target, "target")
	mustSymlink(t, fsys, "target", link)

	linkID, targetID := mustFileID(t, fsys, link), mustFileID(t, fsys, target)
	if linkID.Same(targetID) {
		t.Errorf("FileID(link) = FileID(target) = %+v: FileID followed the symlink", linkID)
	}
	// Open follows the link, so the open file is the target.
	if id := mustFileIDOf(t, fsys, mustOpen(t, openRead(fsys), link)); !identical(id, targetID) {
		t.Errorf("FileIDOf(Open(link)) = %+v, want the target's %+v", id, targetID)
	}
	if err := fsys.Remove(target); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.FileID(link); err != nil {
		t.Errorf("FileID of a dangling symlink: %v, want its own identity", err)
	}
}

func TestCreateExclHasOneWinner(t *testing.T) {
	const workers, rounds = 16, 200
	fsys := lockfs.OS()
	p := filepath.Join(t.TempDir(), "lock")

	for round := range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		var winners atomic.Int32
		var winner atomic.Int32
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				<-start
				f, err := fsys.OpenFile(p, fsx.CreateExcl, 0o600)
				if err != nil {
					if !errors.Is(err, fs.ErrExist) {
						errs <- err
					}
					return
				}
				defer f.Close()
				winners.Add(1)
				winner.Store(int32(w))
				if _, err := io.WriteString(f, strconv.Itoa(w)); err != nil {
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d goroutines created %s with O_EXCL, want 1", round, n, p)
		}
		if got, want := readFile(t, fsys, p), strconv.Itoa(int(winner.Load())); got != want {
			t.Fatalf("round %d: file holds %q, want the winner's %q", round, got, want)
		}
		if err := fsys.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenNoFollow(t *testing.T) {
	fsys := lockfs.OS()
	t.Run("OpenNoFollow", func(t *testing.T) { testOpenNoFollow(t, fsys, fsys.OpenNoFollow) })
	// OpenLook opens as OpenNoFollow does (a bare descriptor on unix).
	t.Run("OpenLook", func(t *testing.T) {
		testOpenNoFollow(t, fsys, func(name string) (lockfs.File, error) { return fsx.OpenLook(fsys, name) })
	})
}

func testOpenNoFollow(t *testing.T, fsys lockfs.FS, open func(string) (lockfs.File, error)) {
	dir := t.TempDir()
	file, sub := filepath.Join(dir, "file"), filepath.Join(dir, "sub")
	writeFile(t, fsys, file, "stamp")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}

	t.Run("regular file reads", func(t *testing.T) {
		f := mustOpen(t, open, file)
		b, err := io.ReadAll(f)
		if err != nil || string(b) != "stamp" {
			t.Errorf("read %q, %v; want %q", b, err, "stamp")
		}
	})
	t.Run("directory opens", func(t *testing.T) {
		// Telling a directory from a lock file is the caller's job, by Stat.
		fi, err := mustOpen(t, open, sub).Stat()
		if err != nil || !fi.IsDir() {
			t.Errorf("Stat = %v, %v; want a directory", fi, err)
		}
	})

	type refusal struct {
		name, path string
		is         error
	}
	refused := []refusal{
		{"missing", filepath.Join(dir, "missing"), fs.ErrNotExist},
		{"missing parent", filepath.Join(dir, "missing", "x"), fs.ErrNotExist},
		{"empty path", "", fs.ErrInvalid},
	}
	if symlinksWork(t, fsys, dir) {
		mustSymlink(t, fsys, "file", filepath.Join(dir, "link"))
		mustSymlink(t, fsys, "missing", filepath.Join(dir, "dangling"))
		mustSymlink(t, fsys, "sub", filepath.Join(dir, "dirlink"))
		refused = append(refused,
			refusal{"symlink to a file", filepath.Join(dir, "link"), syscall.ELOOP},
			refusal{"dangling symlink", filepath.Join(dir, "dangling"), syscall.ELOOP},
			refusal{"symlink to a directory", filepath.Join(dir, "dirlink"), syscall.ELOOP},
		)
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			f, err := open(tc.path)
			if err == nil {
				f.Close()
				t.Fatalf("OpenNoFollow(%q) succeeded, want an error", tc.path)
			}
			checkPathError(t, err, tc.is)
		})
	}
}

func TestLinkErrors(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeFile(t, fsys, a, "a")
	writeFile(t, fsys, b, "b")

	tests := []struct {
		name             string
		oldname, newname string
		is               error
	}{
		{"newname exists", a, b, fs.ErrExist},
		{"oldname missing", filepath.Join(dir, "missing"), filepath.Join(dir, "c"), fs.ErrNotExist},
		{"missing parent", a, filepath.Join(dir, "missing", "c"), fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := fsys.Link(tc.oldname, tc.newname)
			if _, ok := errors.AsType[*os.LinkError](err); !ok {
				t.Errorf("Link = %v, want an *os.LinkError", err)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("Link = %v, want an error matching %v", err, tc.is)
			}
		})
	}
	if got := readFile(t, fsys, b); got != "b" {
		t.Errorf("Link over an existing file changed it to %q", got)
	}
}

func TestBadInput(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	file, missing := filepath.Join(dir, "file"), filepath.Join(dir, "missing")
	writeFile(t, fsys, file, "x")
	closed := mustOpen(t, openRead(fsys), file)
	closed.Close()

	tests := []struct {
		name string
		call func() error
		is   error
	}{
		// An empty path is the same error everywhere.
		{"OpenFile empty", func() error { return second(fsys.OpenFile("", fsx.CreateExcl, 0o600)) }, fs.ErrInvalid},
		{"Remove empty", func() error { return fsys.Remove("") }, fs.ErrInvalid},
		{"Rename empty", func() error { return fsys.Rename("", file) }, fs.ErrInvalid},
		{"Lstat empty", func() error { _, err := fsys.Lstat(""); return err }, fs.ErrInvalid},
		{"Link empty", func() error { return fsys.Link("", file) }, fs.ErrInvalid},
		{"OpenNoFollow empty", func() error { return second(fsys.OpenNoFollow("")) }, fs.ErrInvalid},
		{"FileID empty", func() error { return second(fsys.FileID("")) }, fs.ErrInvalid},

		// A directory where a file is expected, and the reverse.
		{"CreateExcl on a directory", func() error { return second(fsys.OpenFile(dir, fsx.CreateExcl, 0o600)) }, fs.ErrExist},

		// A missing directory, or a missing parent.
		{"CreateExcl in a missing directory", func() error {
			return second(fsys.OpenFile(filepath.Join(missing, "lock"), fsx.CreateExcl, 0o600))
		}, fs.ErrNotExist},
		{"FileID in a missing directory", func() error { return second(fsys.FileID(filepath.Join(missing, "lock"))) }, fs.ErrNotExist},

		// Files FileIDOf cannot identify.
		{"FileIDOf nil", func() error { return second(fsys.FileIDOf(nil)) }, fs.ErrInvalid},
		{"FileIDOf nil *os.File", func() error { return second(fsys.FileIDOf((*os.File)(nil))) }, fs.ErrInvalid},
		{"FileIDOf closed file", func() error { return second(fsys.FileIDOf(closed)) }, fs.ErrClosed},
		{"FileIDOf another FS's file", func() error { return second(fsys.FileIDOf(otherFile{closed})) }, lockfs.ErrNoFileID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkPathError(t, tc.call(), tc.is)
		})
	}
	if _, err := fsys.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("bad input created %s (Stat: %v)", missing, err)
	}
}

func TestSymlinkLoop(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	needSymlinks(t, fsys, dir)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	mustSymlink(t, fsys, "b", a)
	mustSymlink(t, fsys, "a", b)
	// Windows reports a loop as its own error, not ELOOP.
	var loop error = syscall.ELOOP
	if runtime.GOOS == "windows" {
		loop = nil
	}

	tests := []struct {
		name string
		call func() error
		is   error
	}{
		{"CreateExcl at the loop", func() error { return second(fsys.OpenFile(a, fsx.CreateExcl, 0o600)) }, fs.ErrExist},
		{"CreateExcl through the loop", func() error {
			return second(fsys.OpenFile(filepath.Join(a, "lock"), fsx.CreateExcl, 0o600))
		}, loop},
		{"OpenNoFollow at the loop", func() error { return second(fsys.OpenNoFollow(a)) }, syscall.ELOOP},
		{"OpenNoFollow through the loop", func() error { return second(fsys.OpenNoFollow(filepath.Join(a, "lock"))) }, loop},
		{"FileID through the loop", func() error { return second(fsys.FileID(filepath.Join(a, "lock"))) }, loop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkPathError(t, tc.call(), tc.is)
		})
	}
	if _, err := fsys.FileID(a); err != nil {
		t.Errorf("FileID of a symlink in a loop: %v, want the link's own identity", err)
	}
}

// checkPathError fails unless err is a *fs.PathError matching is (when is is
// not nil).
func checkPathError(t *testing.T, err, is error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if _, ok := errors.AsType[*fs.PathError](err); !ok {
		t.Errorf("error %v (%T) does not wrap a *fs.PathError", err, err)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("error %v does not match %v", err, is)
	}
}

// identical is stricter than Same: it also wants the birth times to agree
// on whether they are known.
func identical(a, b lockfs.FileID) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.HasBirth == b.HasBirth && a.Birth.Equal(b.Birth)
}

func second[T any](_ T, err error) error { return err }

// otherFile is a File of no FS of this package.
type otherFile struct{ lockfs.File }

// openRead is fsys's read-only open, as mustOpen takes one.
func openRead(fsys lockfs.FS) func(string) (lockfs.File, error) {
	return func(name string) (lockfs.File, error) { return fsys.OpenFile(name, os.O_RDONLY, 0) }
}

func writeFile(t *testing.T, fsys lockfs.FS, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys lockfs.FS, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustOpen opens name with open and closes it when the test ends.
func mustOpen(t *testing.T, open func(string) (lockfs.File, error), name string) lockfs.File {
	t.Helper()
	f, err := open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func mustFileID(t *testing.T, fsys lockfs.FS, name string) lockfs.FileID {
	t.Helper()
	id, err := fsys.FileID(name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustFileIDOf(t *testing.T, fsys lockfs.FS, f lockfs.File) lockfs.FileID {
	t.Helper()
	id, err := fsys.FileIDOf(f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustSymlink(t *testing.T, fsys lockfs.FS, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Fatal(err)
	}
}

// symlinkTrouble returns why this process cannot create symlinks in dir,
// or "" when it can: windows allows them only with a privilege or in
// developer mode, and wine only pretends to.
func symlinkTrouble(t *testing.T, fsys lockfs.FS, dir string) string {
	t.Helper()
	probe := filepath.Join(dir, "symlink-probe")
	if err := os.Symlink("nowhere", probe); err != nil {
		if runtime.GOOS == "windows" {
			return "symlinks unavailable: " + err.Error()
		}
		t.Fatal(err)
	}
	if v := locktest.Wine(); v != "" {
		if _, err := os.Lstat(probe); err != nil {
			return v + ": " + locktest.WineSymlinks
		}
	}
	if err := fsys.Remove(probe); err != nil {
		t.Fatal(err)
	}
	return ""
}

// symlinksWork reports whether symlinks can be created in dir, for a test
// that leaves out its symlink cases when they cannot.
func symlinksWork(t *testing.T, fsys lockfs.FS, dir string) bool {
	t.Helper()
	if why := symlinkTrouble(t, fsys, dir); why != "" {
		t.Logf("%s; skipping the symlink cases", why)
		return false
	}
	return true
}

// needSymlinks skips a test about symlinks where they cannot be created.
func needSymlinks(t *testing.T, fsys lockfs.FS, dir string) {
	t.Helper()
	if why := symlinkTrouble(t, fsys, dir); why != "" {
		t.Skip(why)
	}
}

// A file the FS has open, by any of its opens, can be renamed and removed
// meanwhile, as a reclaimer and a releasing holder do to a lock file that
// another process holds or reads: windows lets them only because every
// open shares delete.
func TestOpenFilesCanBeRenamedAndRemoved(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		open func(string) (lockfs.File, error)
	}{
		{"OpenFile", func(p string) (lockfs.File, error) { return fsys.OpenFile(p, os.O_RDWR, 0) }},
		{"OpenFile read-only", openRead(fsys)},
		{"OpenNoFollow", fsys.OpenNoFollow},
		{"OpenFile creating", func(p string) (lockfs.File, error) { return fsys.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, moved := filepath.Join(dir, tc.name), filepath.Join(dir, tc.name+".moved")
			writeFile(t, fsys, p, "lock")
			f := mustOpen(t, tc.open, p)
			if err := fsys.Rename(p, moved); err != nil {
				t.Fatalf("Rename of an open file: %v", err)
			}
			if err := fsys.Remove(moved); err != nil {
				t.Fatalf("Remove of an open file: %v", err)
			}
			if _, err := f.Stat(); err != nil {
				t.Errorf("the open file, removed: Stat: %v", err)
			}
		})
	}
}
