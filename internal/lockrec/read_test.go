package lockrec_test

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// rewrittenFile is a lock file that a writer truncates and rewrites while
// it is read, as Linux shows it to a reader that began before: the first
// stat sees the old bytes' size, the read returns the old bytes with the
// new size (a whole stamp, then zeros), and later stats and reads see the
// new bytes. With rewrites > 1 the writer keeps at it for that many reads.
type rewrittenFile struct {
	lockfs.File
	old, new []byte
	rewrites int
	stats    int
	reads    int
}

type fakeInfo struct {
	fs.FileInfo
	size  int64
	mtime time.Time
}

func (i fakeInfo) Size() int64        { return i.size }
func (i fakeInfo) ModTime() time.Time { return i.mtime }
func (i fakeInfo) Mode() fs.FileMode  { return 0o644 }
func (i fakeInfo) IsDir() bool        { return false }

func (f *rewrittenFile) Stat() (fs.FileInfo, error) {
	f.stats++
	if f.stats == 1 {
		return fakeInfo{size: int64(len(f.old)), mtime: time.Unix(1, 0)}, nil
	}
	return fakeInfo{size: int64(len(f.new)), mtime: time.Unix(int64(1+min(f.stats, f.rewrites+1)), 0)}, nil
}

func (f *rewrittenFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	data := f.new
	if f.reads <= f.rewrites {
		data = make([]byte, len(f.new))
		copy(data, f.old)
	}
	n := copy(p, data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestReadAcrossARewrite: a read that a truncate and write overtook is
// not taken for what it returned (a stamp and zeros is no lock file): the
// file is read again, and what it settles to is what counts; a file that
// never settles is a stamp being written (Torn), never Foreign.
func TestReadAcrossARewrite(t *testing.T) {
	stamp := lockrec.Record{Identity: platform.Identity{Host: "h", PID: 42}, Nonce: "n"}.Marshal()
	db := lockrec.EmptyDatabase()
	base, err := os.Create(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close() // before TempDir's removal: windows refuses to remove an open file
	for _, tc := range []struct {
		name     string
		old, new []byte
		rewrites int
		want     lockrec.Kind
	}{
		{"a stamp cleared to the empty database", stamp, db, 1, lockrec.SQLite},
		{"the empty database stamped", db, stamp, 1, lockrec.Stamp},
		{"a stamp cleared while read again and again", stamp, db, 10, lockrec.Torn},
	} {
		f := &rewrittenFile{File: base, old: tc.old, new: tc.new, rewrites: tc.rewrites}
		kind, data, err := lockrec.ReadOpen(lockfs.File(f))
		if err != nil || kind != tc.want {
			t.Errorf("%s: ReadOpen = %v, %v; want %v", tc.name, kind, err, tc.want)
		}
		if tc.want != lockrec.Torn && !bytes.Equal(data, tc.new) {
			t.Errorf("%s: ReadOpen returned %.40q; want the new bytes", tc.name, data)
		}
		if f.reads < 2 {
			t.Errorf("%s: %d reads; the overtaken read was kept", tc.name, f.reads)
		}
	}
}
