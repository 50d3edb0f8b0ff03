package lockrec_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
)

// shortNames is an FS whose names may be 143 bytes at most (eCryptfs), as
// the system reports it: ENAMETOOLONG.
type shortNames struct{ lockfs.FS }

func (s shortNames) OpenNoFollow(name string) (lockfs.File, error) {
	if i := strings.LastIndexByte(name, '/'); len(name)-i-1 > 143 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: lockfs.ErrNameTooLong}
	}
	return s.FS.OpenNoFollow(name)
}

// withLimits is shortNames with the system's path limits known.
type withLimits struct{ shortNames }

func (withLimits) PathLimits() (int, int) { return 4095, 143 }

// TestReadMarkNameTooLong: a mark whose name is too long for the
// filesystem cannot exist, so it reads as absent, but only when the path's
// length is known to be within the system's: else another process might
// reach it by a shorter path, and it reads as present, holder unknown.
func TestReadMarkNameTooLong(t *testing.T) {
	base := fake.New().FS()
	path := "/tmp/" + strings.Repeat("n", 140)
	if m := lockrec.ReadMark(withLimits{shortNames{base}}, path); m.Present {
		t.Errorf("ReadMark with a name over NAME_MAX, path limits known: %+v; want absent", m)
	}
	if m := lockrec.ReadMark(shortNames{base}, path); !m.Present || m.Record != nil {
		t.Errorf("ReadMark with a name over NAME_MAX, path limits unknown: %+v; want present, unknown", m)
	}
}
