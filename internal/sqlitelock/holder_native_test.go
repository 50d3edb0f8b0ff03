//go:build linux || darwin || freebsd

package sqlitelock_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// TestReadHolderOddFiles: .holder is diagnostics only, read from a
// regular file of at most 64 KiB, without following a symlink and without
// blocking on a FIFO; anything else reads as an unknown holder.
func TestReadHolderOddFiles(t *testing.T) {
	record, err := json.Marshal(lockrec.Record{Format: "proclock/1", Identity: platform.Identity{Host: "h", PID: 42}, AcquiredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	padded := func(n int) []byte { return append(bytes.Clone(record), bytes.Repeat([]byte(" "), n-len(record))...) }
	writeFile := func(data []byte) func(t *testing.T, name, elsewhere string) {
		return func(t *testing.T, name, _ string) {
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		stage func(t *testing.T, name, elsewhere string)
		want  bool // a record with pid 42
	}{
		{"record", writeFile(record), true},
		{"padded to exactly 64 KiB", writeFile(padded(64 << 10)), true},
		{"padded to 64 KiB + 1", writeFile(padded(64<<10 + 1)), false},
		{"symlink to a record", func(t *testing.T, name, elsewhere string) {
			if err := os.WriteFile(elsewhere, record, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, name); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"fifo", func(t *testing.T, name, _ string) {
			if err := unix.Mkfifo(name, 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"directory", func(t *testing.T, name, _ string) {
			if err := os.Mkdir(name, 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"missing", func(*testing.T, string, string) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "x.lock")
			tc.stage(t, path+lockrec.MarkSuffix, filepath.Join(dir, "elsewhere"))
			done := make(chan *lockrec.Record, 1)
			go func() { done <- lockrec.ReadHolder(lockfs.OS(), path) }()
			timer := time.NewTimer(30 * time.Second)
			defer timer.Stop()
			select {
			case r := <-done:
				if got := r != nil && r.PID == 42; got != tc.want {
					t.Fatalf("ReadHolder = %+v; want a record: %v", r, tc.want)
				}
			case <-timer.C:
				t.Fatal("ReadHolder blocked")
			}
		})
	}
}
