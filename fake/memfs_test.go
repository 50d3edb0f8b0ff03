package fake_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

func mustWrite(t *testing.T, fsys lockfs.FS, name, content string) {
	t.Helper()
	if err := writeFile(fsys, name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, fsys lockfs.FS, name string) string {
	t.Helper()
	b, err := readFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFile and readFile are os.WriteFile and os.ReadFile through fsys,
// as the process fsys belongs to does them.
func writeFile(fsys lockfs.FS, name string, data []byte, perm fs.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

func openRead(fsys lockfs.FS) func(string) (lockfs.File, error) {
	return func(name string) (lockfs.File, error) { return fsys.OpenFile(name, os.O_RDONLY, 0) }
}

func readFile(fsys lockfs.FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func mustID(t *testing.T, fsys lockfs.FS, name string) lockfs.FileID {
	t.Helper()
	id, err := fsys.FileID(name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestExclusiveCreateHasOneWinner(t *testing.T) {
	const goroutines, rounds = 16, 200
	w := fake.New()
	procs := make([]*fake.Process, goroutines)
	for i := range procs {
		procs[i] = w.Spawn()
	}
	for round := range rounds {
		var winners atomic.Int32
		errs := make(chan error, goroutines)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				f, err := p.FS().OpenFile("/tmp/lock", fsx.CreateExcl, 0o644)
				switch {
				case err == nil:
					winners.Add(1)
					errs <- f.Close()
				case !errors.Is(err, fs.ErrExist):
					errs <- err
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d creators, want exactly 1", round, n)
		}
		if err := w.FS().Remove("/tmp/lock"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHardLinksShareAnInode(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/a", "one")
	if err := fsys.Link("/tmp/a", "/tmp/b"); err != nil {
		t.Fatal(err)
	}
	if a, b := mustID(t, fsys, "/tmp/a"), mustID(t, fsys, "/tmp/b"); !a.Same(b) {
		t.Errorf("FileIDs of two links differ: %+v, %+v", a, b)
	}
	mustWrite(t, fsys, "/tmp/b", "two")
	if got := mustRead(t, fsys, "/tmp/a"); got != "two" {
		t.Errorf("write through one link, read through the other: %q", got)
	}
	if err := fsys.Remove("/tmp/a"); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, fsys, "/tmp/b"); got != "two" {
		t.Errorf("the other link after Remove: %q", got)
	}

}

func TestRemoveKeepsAnOpenHandleReadable(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/a", "still here")
	f, err := fsys.OpenFile("/tmp/a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, err := fsys.FileIDOf(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("/tmp/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stat("/tmp/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after Remove: %v, want ErrNotExist", err)
	}
	got, err := io.ReadAll(f)
	if err != nil || string(got) != "still here" {
		t.Errorf("read through the handle after Remove: %q, %v", got, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len("still here")) {
		t.Errorf("Stat of the handle: %v, %v", fi, err)
	}
	if after, err := fsys.FileIDOf(f); err != nil || !after.Same(before) {
		t.Errorf("FileIDOf after Remove = %+v, %v; want %+v", after, err, before)
	}
}

func TestRenameReplacesAtomically(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/dst", "old")
	mustWrite(t, fsys, "/tmp/src", "new")
	src := mustID(t, fsys, "/tmp/src")
	oldHandle, err := fsys.OpenFile("/tmp/dst", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer oldHandle.Close()

	if err := fsys.Rename("/tmp/src", "/tmp/dst"); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, fsys, "/tmp/dst"); got != "new" {
		t.Errorf("dst after Rename reads %q, want %q", got, "new")
	}
	if dst := mustID(t, fsys, "/tmp/dst"); !dst.Same(src) {
		t.Errorf("Rename changed the inode: %+v, was %+v", dst, src)
	}
	if _, err := w.Stat("/tmp/src"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("src after Rename: %v, want ErrNotExist", err)
	}
	if got, _ := io.ReadAll(oldHandle); string(got) != "old" {
		t.Errorf("a handle on the replaced file reads %q, want %q", got, "old")
	}

	// Readers never see the name missing or a file half written.
	stop := make(chan struct{})
	readerErr := make(chan error, 1)
	reader := w.Spawn().FS()
	go func() {
		for {
			select {
			case <-stop:
				readerErr <- nil
				return
			default:
			}
			b, err := readFile(reader, "/tmp/dst")
			if err != nil || (string(b) != strings.Repeat("A", 64) && string(b) != strings.Repeat("B", 64) && string(b) != "new") {
				readerErr <- fmt.Errorf("reader saw %q, %v", b, err)
				return
			}
			runtime.Gosched() // wasm has one thread and no preemption
		}
	}()
	for i := range 200 {
		content := strings.Repeat(string(rune('A'+i%2)), 64)
		mustWrite(t, fsys, "/tmp/tmp", content)
		if err := fsys.Rename("/tmp/tmp", "/tmp/dst"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-readerErr; err != nil {
		t.Error(err)
	}
}

func TestRenameAndLinkRefusals(t *testing.T) {
	w := fake.New()
	fsys := w.FS()
	mustMkdir(t, w, "/tmp/full", "/tmp/full/sub", "/tmp/empty")
	mustWrite(t, fsys, "/tmp/file", "")
	mustWrite(t, fsys, "/tmp/c", "")
	rename, link := fsys.Rename, fsys.Link
	tests := []struct {
		name     string
		op       func(string, string) error
		old, new string
		want     error
	}{
		{"rename a file onto a directory", rename, "/tmp/file", "/tmp/empty", syscall.EISDIR},
		{"rename a directory onto a non-empty one", rename, "/tmp/empty", "/tmp/full", syscall.ENOTEMPTY},
		{"rename a directory onto a file", rename, "/tmp/empty", "/tmp/file", syscall.ENOTDIR},
		{"rename a directory into itself", rename, "/tmp/full", "/tmp/full/sub/x", syscall.EINVAL},
		{"rename a missing file", rename, "/tmp/none", "/tmp/x", syscall.ENOENT},
		{"rename into a missing directory", rename, "/tmp/file", "/tmp/none/x", syscall.ENOENT},
		{"link onto an existing name", link, "/tmp/file", "/tmp/c", fs.ErrExist},
		{"link a directory", link, "/tmp/empty", "/tmp/e", syscall.EPERM},
		{"link a missing file", link, "/tmp/none", "/tmp/e", fs.ErrNotExist},
	}
	for _, tt := range tests {
		err := tt.op(tt.old, tt.new)
		var le *os.LinkError
		if !errors.Is(err, tt.want) || !errors.As(err, &le) {
			t.Errorf("%s: %v, want %v in a *os.LinkError", tt.name, err, tt.want)
		}
	}
	if err := fsys.Rename("/tmp/empty", "/tmp/moved"); err != nil {
		t.Errorf("Rename of an empty directory: %v", err)
	}
}

func TestSymlinks(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	if err := w.Mkdir("/tmp/real", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, fsys, "/tmp/real/file", "data")
	links := map[string]string{
		"/tmp/dir":      "real", // relative to /tmp
		"/tmp/abs":      "/tmp/real/file",
		"/tmp/dangling": "/tmp/real/later",
		"/tmp/excl":     "/tmp/real/never",
	}
	for name, target := range links {
		if err := w.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}

	if got := mustRead(t, fsys, "/tmp/dir/file"); got != "data" {
		t.Errorf("read through a directory symlink: %q", got)
	}
	if got := mustRead(t, fsys, "/tmp/abs"); got != "data" {
		t.Errorf("read through a file symlink: %q", got)
	}
	if fi, err := fsys.Lstat("/tmp/abs"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat of a symlink: %v, %v", fi, err)
	}
	if fi, err := w.Stat("/tmp/abs"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("Stat of a symlink: %v, %v; want its regular target", fi, err)
	}
	if dir, real := mustDirID(t, fsys, "/tmp/dir"), mustDirID(t, fsys, "/tmp/real"); dir != real {
		t.Errorf("DirID through a symlink = %+v; want /tmp/real's %+v", dir, real)
	}
	if link, file := mustID(t, fsys, "/tmp/abs"), mustID(t, fsys, "/tmp/real/file"); link.Same(file) {
		t.Error("FileID followed a symlink at the last element")
	}

	if _, err := fsys.OpenFile("/tmp/excl", fsx.CreateExcl, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on a dangling symlink: %v, want ErrExist", err)
	}
	if _, err := w.Stat("/tmp/real/never"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("O_EXCL created the target of a symlink: %v", err)
	}
	if _, err := fsys.OpenNoFollow("/tmp/abs"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("OpenNoFollow of a symlink: %v, want ELOOP", err)
	}
	mustWrite(t, fsys, "/tmp/dangling", "created")
	if got := mustRead(t, fsys, "/tmp/real/later"); got != "created" {
		t.Errorf("create through a dangling symlink made %q", got)
	}
}

func TestSymlinkLoopsEndInELOOP(t *testing.T) {
	w := fake.New()
	fsys := w.FS()
	if err := w.Symlink("/tmp/b", "/tmp/a"); err != nil {
		t.Fatal(err)
	}
	if err := w.Symlink("a", "/tmp/b"); err != nil {
		t.Fatal(err)
	}
	// A chain of 41 links: 40 hops are allowed, 41 are not.
	mustWrite(t, fsys, "/tmp/end", "end")
	for i := 40; i >= 0; i-- {
		target := fmt.Sprintf("/tmp/l%d", i+1)
		if i == 40 {
			target = "/tmp/end"
		}
		if err := w.Symlink(target, fmt.Sprintf("/tmp/l%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustRead(t, fsys, "/tmp/l1"); got != "end" {
		t.Errorf("40 hops read %q", got)
	}
	ops := map[string]func(string) error{
		"Open":   func(n string) error { _, err := fsys.OpenFile(n, os.O_RDONLY, 0); return err },
		"Stat":   func(n string) error { _, err := w.Stat(n); return err },
		"DirID":  func(n string) error { _, err := fsys.DirID(n); return err },
		"Create": func(n string) error { _, err := fsys.OpenFile(n, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666); return err },
	}
	for opName, op := range ops {
		for _, name := range []string{"/tmp/a", "/tmp/b/x", "/tmp/l0"} {
			err := op(name)
			var pe *fs.PathError
			if !errors.Is(err, syscall.ELOOP) || !errors.As(err, &pe) {
				t.Errorf("%s(%s): %v, want ELOOP in a *fs.PathError", opName, name, err)
			}
		}
	}
}

func TestBadInputIsAPathError(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/file", "x")
	mustMkdir(t, w, "/tmp/dir", "/tmp/dir/sub")
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"empty Open", func() error { _, err := fsys.OpenFile("", os.O_RDONLY, 0); return err }, fs.ErrInvalid},
		{"empty Stat", func() error { _, err := w.Stat(""); return err }, fs.ErrInvalid},
		{"empty FileID", func() error { _, err := fsys.FileID(""); return err }, fs.ErrInvalid},
		{"empty OpenNoFollow", func() error { _, err := fsys.OpenNoFollow(""); return err }, fs.ErrInvalid},
		{"empty Mkdir", func() error { return w.Mkdir("", 0o755) }, fs.ErrInvalid},
		{"empty DirID", func() error { _, err := fsys.DirID(""); return err }, fs.ErrInvalid},
		{"empty Rename", func() error { return fsys.Rename("/tmp/file", "") }, fs.ErrInvalid},
		{"a directory opened for writing", func() error { _, err := fsys.OpenFile("/tmp/dir", os.O_WRONLY, 0); return err }, syscall.EISDIR},
		{"a directory created exclusively", func() error { _, err := fsys.OpenFile("/tmp/dir", fsx.CreateExcl, 0o644); return err }, fs.ErrExist},
		{"a directory read", func() error { _, err := readFile(fsys, "/tmp/dir"); return err }, syscall.EISDIR},
		{"a missing parent", func() error {
			_, err := fsys.OpenFile("/tmp/none/x", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
			return err
		}, fs.ErrNotExist},
		{"a file as parent", func() error {
			_, err := fsys.OpenFile("/tmp/file/x", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
			return err
		}, syscall.ENOTDIR},
		{"Mkdir of an existing name", func() error { return w.Mkdir("/tmp/file", 0o755) }, fs.ErrExist},
		{"Mkdir through a file", func() error { return w.Mkdir("/tmp/file/x", 0o755) }, syscall.ENOTDIR},
		{"Remove of a non-empty directory", func() error { return fsys.Remove("/tmp/dir") }, syscall.ENOTEMPTY},
		{"Remove of a missing file", func() error { return fsys.Remove("/tmp/none") }, fs.ErrNotExist},
		{"DirID of a file", func() error { _, err := fsys.DirID("/tmp/file"); return err }, syscall.ENOTDIR},
		{"DirID of a missing directory", func() error { _, err := fsys.DirID("/tmp/none"); return err }, fs.ErrNotExist},
	}
	for _, tt := range tests {
		err := tt.do()
		var pe *fs.PathError
		if !errors.Is(err, tt.want) || !errors.As(err, &pe) {
			t.Errorf("%s: %v, want %v in a *fs.PathError", tt.name, err, tt.want)
		}
	}
	if w.OpenFiles() != 0 {
		t.Errorf("failed opens left %d files open", w.OpenFiles())
	}
}

func TestShortReadsEndInEOF(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/five", "12345")
	mustWrite(t, fsys, "/tmp/empty", "")
	type read struct {
		size  int
		n     int
		isEOF bool
	}
	tests := []struct {
		name  string
		file  string
		reads []read
	}{
		{"big buffer", "/tmp/five", []read{{64 << 10, 5, true}, {64 << 10, 0, true}}},
		{"exact buffer", "/tmp/five", []read{{5, 5, false}, {5, 0, true}}},
		{"small buffers", "/tmp/five", []read{{2, 2, false}, {2, 2, false}, {2, 1, true}}},
		{"empty file", "/tmp/empty", []read{{10, 0, true}}},
		{"empty buffer", "/tmp/five", []read{{0, 0, false}, {5, 5, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := fsys.OpenFile(tt.file, os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for i, r := range tt.reads {
				n, err := f.Read(make([]byte, r.size))
				if n != r.n || (err == io.EOF) != r.isEOF || (err != nil && err != io.EOF) {
					t.Errorf("read %d of %d bytes = %d, %v; want %d, EOF %v", i, r.size, n, err, r.n, r.isEOF)
				}
			}
		})
	}
}

func TestOpenFlags(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/f", "hello")

	f, err := fsys.OpenFile("/tmp/f", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(" world"), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Read of a write-only file: %v, want EBADF", err)
	}
	f.Close()
	if got := mustRead(t, fsys, "/tmp/f"); got != "hello world" {
		t.Errorf("after WriteAt: %q", got)
	}

	r, err := fsys.OpenFile("/tmp/f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write([]byte("x")); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Write to a read-only file: %v, want EBADF", err)
	}
	r.Close()

	w.Advance(time.Minute)
	tr, err := fsys.OpenFile("/tmp/f", os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fi, err := tr.Stat()
	if err != nil || fi.Size() != 0 || !fi.ModTime().Equal(w.Now()) {
		t.Errorf("after O_TRUNC: size %d, mtime %v, %v; want 0 and %v", fi.Size(), fi.ModTime(), err, w.Now())
	}
	if _, err := tr.WriteAt([]byte("ab"), 3); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, fsys, "/tmp/f"); got != "\x00\x00\x00ab" {
		t.Errorf("WriteAt past the end: %q", got)
	}
	if err := tr.Truncate(1); err != nil || mustRead(t, fsys, "/tmp/f") != "\x00" {
		t.Errorf("Truncate(1): %v", err)
	}
}

func TestCloseTwiceFails(t *testing.T) {
	w := fake.New()
	f, err := w.Spawn().FS().OpenFile("/tmp/f", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if w.OpenFiles() != 1 {
		t.Fatalf("%d files open, want 1", w.OpenFiles())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var pe *fs.PathError
	if err := f.Close(); !errors.Is(err, os.ErrClosed) || !errors.As(err, &pe) {
		t.Errorf("second Close: %v, want os.ErrClosed in a *fs.PathError", err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v, want os.ErrClosed", err)
	}
	if w.OpenFiles() != 0 {
		t.Errorf("%d files open after Close", w.OpenFiles())
	}
}

func TestFIFOsAndSockets(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	if err := w.Mknod("/tmp/fifo", fs.ModeNamedPipe|0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Mknod("/tmp/fifo", fs.ModeNamedPipe|0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Mknod over a FIFO: %v, want ErrExist", err)
	}
	if err := w.Mknod("/tmp/sock", fs.ModeSocket|0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Mknod("/tmp/bad", fs.ModeDir); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Mknod of a directory: %v, want EINVAL", err)
	}

	f, err := fsys.OpenNoFollow("/tmp/fifo")
	if err != nil {
		t.Fatalf("OpenNoFollow of a FIFO: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("Stat of the FIFO: %v, %v", fi, err)
	}
	if n, err := f.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("Read of a FIFO = %d, %v; want 0, io.EOF", n, err)
	}
	if _, err := fsys.OpenNoFollow("/tmp/sock"); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("OpenNoFollow of a socket: %v, want ENXIO", err)
	}
}

// SwapInode puts another file at a name in one step, with the same bytes
// and modification time: only its identity tells it apart. Handles keep
// the old file.
func TestSwapInode(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/lock", "stamp")
	before := mustID(t, fsys, "/tmp/lock")
	fiBefore, err := w.Stat("/tmp/lock")
	if err != nil {
		t.Fatal(err)
	}
	held, err := fsys.OpenFile("/tmp/lock", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := w.SwapInode("/tmp/lock"); err != nil {
		t.Fatal(err)
	}
	after := mustID(t, fsys, "/tmp/lock")
	if after.Same(before) || after.Ino == before.Ino || after.Dev != before.Dev {
		t.Errorf("FileID after %+v, before %+v", after, before)
	}
	fiAfter, err := w.Stat("/tmp/lock")
	if err != nil || mustRead(t, fsys, "/tmp/lock") != "stamp" || !fiAfter.ModTime().Equal(fiBefore.ModTime()) {
		t.Errorf("after %v, before %v", fiAfter, fiBefore)
	}
	if byHandle, err := fsys.FileIDOf(held); err != nil || !byHandle.Same(before) {
		t.Errorf("a handle held across identifies as %+v, %v; want the old file", byHandle, err)
	}
	if err := w.SwapInode("/tmp"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("of a directory: %v, want EINVAL", err)
	}
}

func TestDirectories(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustMkdir(t, w, "/tmp/d", "/tmp/d/e")
	for _, name := range []string{"c", "a", "b"} {
		mustWrite(t, fsys, "/tmp/d/"+name, name)
	}
	if got := fmt.Sprint(readDir(t, fsys, "/tmp/d")); got != "[a b c e]" {
		t.Errorf("Readdirnames = %s; want [a b c e]", got)
	}
}

func mustMkdir(t *testing.T, w *fake.World, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := w.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func mustDirID(t *testing.T, fsys lockfs.FS, dir string) lockfs.FileID {
	t.Helper()
	id, err := fsys.DirID(dir)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A gone inode's number (no name, no open handle) goes to the next file
// created, as ext4 hands it out; an open handle or another name keeps it
// taken, and a file renamed over another frees the replaced one's.
func TestGoneInodeNumbersAreReused(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/a", "a")
	a := mustID(t, fsys, "/tmp/a")
	if err := fsys.Remove("/tmp/a"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, fsys, "/tmp/b", "b")
	b := mustID(t, fsys, "/tmp/b")
	if b.Ino != a.Ino || !b.Same(a) {
		t.Errorf("a file created after a removed one: %+v; want its number %d, and its birth time while the clock stands", b, a.Ino)
	}

	held, err := fsys.OpenFile("/tmp/b", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("/tmp/b"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, fsys, "/tmp/c", "c")
	if c := mustID(t, fsys, "/tmp/c"); c.Ino == b.Ino {
		t.Errorf("a removed file held open lost its number %d to a new one", b.Ino)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Second)
	mustWrite(t, fsys, "/tmp/d", "d")
	if d := mustID(t, fsys, "/tmp/d"); d.Ino != b.Ino || d.Same(b) {
		t.Errorf("once its last handle closed: %+v; want number %d, a later birth", d, b.Ino)
	}

	if err := fsys.Link("/tmp/d", "/tmp/d2"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("/tmp/d"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, fsys, "/tmp/e", "e")
	if e := mustID(t, fsys, "/tmp/e"); e.Ino == b.Ino {
		t.Errorf("a file with another name lost its number %d", b.Ino)
	}
	c := mustID(t, fsys, "/tmp/c")
	if err := fsys.Rename("/tmp/e", "/tmp/c"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, fsys, "/tmp/f", "f")
	if f := mustID(t, fsys, "/tmp/f"); f.Ino != c.Ino {
		t.Errorf("after a rename over /tmp/c: new file numbered %d; want the replaced file's %d", f.Ino, c.Ino)
	}
}

func readDir(t *testing.T, fsys lockfs.FS, dir string) []string {
	t.Helper()
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.(interface{ Readdirnames(int) ([]string, error) }).Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	return names
}
