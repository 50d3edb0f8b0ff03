package fake_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/fsx"
)

// TestKeptDirAfterFlip: a directory a process keeps (fsx.DirOpener),
// reached through a symlink that is then flipped to another directory,
// still reaches the first one's files, and hooks see its removal by the
// path it was kept by.
func TestKeptDirAfterFlip(t *testing.T) {
	w := fake.New()
	for _, d := range []string{"/v1", "/v2"} {
		if err := w.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFile(d+"/x", []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Symlink("/v1", "/current"); err != nil {
		t.Fatal(err)
	}
	fsys := w.Spawn().FS()
	d, err := fsys.(fsx.DirOpener).OpenDir("/current")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want, err := fsys.FileID("/v1/x")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.FS().Remove("/current"); err != nil {
		t.Fatal(err)
	}
	if err := w.Symlink("/v2", "/current"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	w.Before("remove", "/current/x", func(ev fake.Event) error {
		seen = append(seen, ev.Path)
		return nil
	})
	if id, err := d.FileID("x"); err != nil || !id.Same(want) {
		t.Errorf("FileID after the flip: %+v, %v; want /v1/x's, %+v", id, err, want)
	}
	if err := d.Remove("x"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stat("/v1/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("/v1/x after its removal through the kept directory: %v", err)
	}
	if _, err := w.Stat("/v2/x"); err != nil {
		t.Errorf("/v2/x: %v; want it kept", err)
	}
	if len(seen) != 1 {
		t.Errorf("hooks saw %q; want the removal of /current/x", seen)
	}
	if err := d.Remove("x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a second Remove: %v; want fs.ErrNotExist", err)
	}
}
