//go:build unix

package lockfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proclock/proclock/lockfs"
	"golang.org/x/sys/unix"
)

func TestOpenNoFollowDoesNotBlock(t *testing.T) {
	fsys := lockfs.OS()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		mode       fs.FileMode
	}{
		{"FIFO without a writer", fifo, fs.ModeNamedPipe},
		{"character device", os.DevNull, fs.ModeDevice | fs.ModeCharDevice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := openUnblocked(t, fsys, tc.path)
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != tc.mode {
				t.Errorf("Stat().Mode().Type() = %v, want %v", fi.Mode().Type(), tc.mode)
			}
			if id, want := mustFileIDOf(t, fsys, f), mustFileID(t, fsys, tc.path); !identical(id, want) {
				t.Errorf("FileIDOf = %+v, want FileID(%s) = %+v", id, tc.path, want)
			}
		})
	}
}

// openUnblocked opens name with OpenNoFollow and reads it to the end, and
// fails the test rather than hang if either blocks: a blocked open(2) cannot
// be interrupted, so the watchdog is the only way to report it.
func openUnblocked(t *testing.T, fsys lockfs.FS, name string) lockfs.File {
	t.Helper()
	type result struct {
		f                lockfs.File
		openErr, readErr error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.f, r.openErr = fsys.OpenNoFollow(name)
		if r.openErr == nil {
			// No writer: EOF at once, or EAGAIN where the FIFO is not polled.
			_, r.readErr = io.Copy(io.Discard, r.f)
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.openErr != nil {
			t.Fatalf("OpenNoFollow(%s): %v", name, r.openErr)
		}
		t.Cleanup(func() { r.f.Close() })
		if r.readErr != nil && !errors.Is(r.readErr, unix.EAGAIN) {
			t.Errorf("reading %s: %v", name, r.readErr)
		}
		return r.f
	case <-time.After(10 * time.Second):
		t.Fatalf("OpenNoFollow(%s) or its first read blocked for 10s", name)
		return nil
	}
}
