package lockrec_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// ReadKept, whose descriptor is kept from one read to the next, sees what
// Read sees after every change to the file at the path: rewritten in
// place with the same size and its mtime set back (only the bytes tell),
// replaced by another file, removed, created again, replaced by a
// symlink. A kept read that trusted its last sighting would return the old
// stamp after the first two.
func TestReadKeptSeesWhatReadSees(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.lock")
	stamp := func(pid int) []byte {
		return lockrec.Record{Format: lockrec.Format, Identity: platform.Identity{Host: "h", PID: pid}, Nonce: "n"}.Marshal()
	}
	write := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) {
		t.Helper()
		want, werr := lockrec.Read(fsys, path)
		for range 2 { // the second through the descriptor the first kept
			got, err := lockrec.ReadKept(fsys, path)
			if (err == nil) != (werr == nil) || errors.Is(err, fs.ErrNotExist) != errors.Is(werr, fs.ErrNotExist) {
				t.Fatalf("%s: ReadKept: %v; Read: %v", step, err, werr)
			}
			if got.Kind != want.Kind || !bytes.Equal(got.Content, want.Content) || !got.ID.SameOpen(want.ID) {
				t.Fatalf("%s: ReadKept saw %s %q; Read %s %q", step, got.Kind, got.Content, want.Kind, want.Content)
			}
		}
	}
	write(stamp(1001))
	check("first stamp")

	// Same size, other bytes, the mtime set back: only the bytes tell.
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(stamp(1002), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, time.Time{}, before.ModTime()); err != nil {
		t.Fatal(err)
	}
	check("rewritten in place, mtime set back")
	if s, _ := lockrec.ReadKept(fsys, path); s.Stamp == nil || s.Stamp.PID != 1002 {
		t.Fatalf("after the rewrite: %+v; want pid 1002's stamp", s.Stamp)
	}

	next := path + ".next"
	if err := os.WriteFile(next, stamp(1003), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	check("replaced by another file")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := lockrec.ReadKept(fsys, path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removed: ReadKept: %v; want fs.ErrNotExist", err)
	}
	write(stamp(1004))
	check("created again")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(next, path); err != nil {
		t.Fatal(err)
	}
	write(stamp(1005)) // through the symlink: next
	check("a symlink to a stamp")
}

// Reads of one file at once share its kept descriptor one at a time, and
// each sees the stamp whole (run with -race).
func TestReadKeptAtOnce(t *testing.T) {
	fsys := lockfs.OS()
	path := filepath.Join(t.TempDir(), "app.lock")
	stamp := lockrec.Record{Format: lockrec.Format, Identity: platform.Identity{Host: "h", PID: 1001}, Nonce: "n"}.Marshal()
	if err := os.WriteFile(path, stamp, 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 200 {
				s, err := lockrec.ReadKept(fsys, path)
				if err == nil && (s.Kind != lockrec.Stamp || !bytes.Equal(s.Content, stamp)) {
					err = fmt.Errorf("ReadKept saw %s %q", s.Kind, s.Content)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
