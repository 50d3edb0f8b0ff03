package lockfs_test

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// A file opened for a look reads, stats and identifies itself as one of
// OpenNoFollow does, StatID telling both at once, and refuses every use
// once closed.
func TestOpenLookFile(t *testing.T) {
	fsys := lockfs.OS()
	name := filepath.Join(t.TempDir(), "file")
	writeFile(t, fsys, name, "stamp")
	f, err := fsx.OpenLook(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	plain := mustOpen(t, fsys.OpenNoFollow, name)
	want, err := plain.Stat()
	if err != nil {
		t.Fatal(err)
	}
	info, id, err := fsx.StatID(fsys, f)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != want.Size() || info.Mode() != want.Mode() || !info.ModTime().Equal(want.ModTime()) || info.Name() != want.Name() {
		t.Errorf("StatID info = %v %v %v %q, want %v %v %v %q", info.Size(), info.Mode(), info.ModTime(), info.Name(),
			want.Size(), want.Mode(), want.ModTime(), want.Name())
	}
	if wantID := mustFileIDOf(t, fsys, plain); !identical(id, wantID) {
		t.Errorf("StatID id = %+v, want FileIDOf = %+v", id, wantID)
	}
	if got := mustFileIDOf(t, fsys, f); !identical(got, id) {
		t.Errorf("FileIDOf(look) = %+v, want %+v", got, id)
	}
	b := make([]byte, 10)
	if n, err := f.ReadAt(b, 0); n != 5 || !errors.Is(err, io.EOF) || string(b[:n]) != "stamp" {
		t.Errorf("ReadAt past the end = %d %q, %v; want 5 %q, EOF", n, b[:n], err, "stamp")
	}
	if all, err := io.ReadAll(f); err != nil || string(all) != "stamp" {
		t.Errorf("ReadAll = %q, %v; want %q", all, err, "stamp")
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("Write on a file opened read-only succeeded")
	}
	if fl, ok := fsys.(fsx.Flocker); ok {
		if got, err := fl.TryFlock(f, false); err != nil || !got {
			t.Errorf("TryFlock(look) = %v, %v; want a lock", got, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	after := map[string]error{
		"Close": f.Close(),
		"Read":  second(f.Read(b)),
	}
	// Where OpenLook is an *os.File (windows), Stat after Close is the
	// OS's answer: windows' GetFileType on a closed handle, "invalid
	// handle", not fs.ErrClosed. The bare descriptor of unix says closed.
	if runtime.GOOS != "windows" {
		after["Stat"] = second(f.Stat())
	}
	for what, err := range after {
		if !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s after Close = %v, want fs.ErrClosed", what, err)
		}
	}
}
