package lockrec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/proclock/proclock/lockfs"
)

// NameMax is the longest file name, in bytes, that the names of a lock's
// sidecars are kept within: NAME_MAX of linux, darwin and the BSDs, and
// 255 UTF-16 units at most on windows. It is fixed, never asked of the
// filesystem, so that every process computes the same names
// (docs/protocol.md, "Names").
const NameMax = 255

// SidecarRoom is how many bytes longer than the lock's own path the path
// of any of its sidecars can be: the deepest guard's private name,
// ".stale.stale.stale.stale-<pid>-<random>", with a pid of up to 10
// digits. A lock path is refused when its sidecars would not fit in the
// system's longest path (docs/protocol.md, "Names").
const SidecarRoom = 64

// hashLen is the length of the hash a shortened name carries: 16 hex
// digits, 64 bits of SHA-256 of the name shortened.
const hashLen = 16

// Sidecar is the path of the sidecar of the file at path named by suffix
// (MarkSuffix, ".stale", a private rename's ".stale-<pid>-<random>"): in
// the same directory, path's base name and the suffix, shortened when
// that is longer than NameMax (SidecarName).
func Sidecar(path, suffix string) string {
	dir, base := filepath.Split(path)
	return dir + SidecarName(base, suffix)
}

// SidecarName is the base name of the sidecar named by suffix of a file
// whose base name is base: base+suffix when it fits in NameMax bytes; else
// as much of base as fits (cut at a UTF-8 character boundary), "~", the
// first 16 hex digits of the SHA-256 of base, and suffix. The hash keeps
// apart two long names that differ only past the cut.
func SidecarName(base, suffix string) string {
	if len(base)+len(suffix) <= NameMax {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(base))
	keep := min(max(NameMax-len(suffix)-1-hashLen, 0), len(base))
	// Not inside a character: at most UTFMax-1 bytes back, so that bytes
	// that are no UTF-8 at all are cut where they fall.
	for back := 0; back < utf8.UTFMax-1 && keep > 0 && keep < len(base) && !utf8.RuneStart(base[keep]); back++ {
		keep--
	}
	var b strings.Builder
	b.WriteString(base[:keep])
	b.WriteByte('~')
	b.WriteString(hex.EncodeToString(sum[:hashLen/2]))
	b.WriteString(suffix)
	return b.String()
}

// ErrPathTooLong is matched by the error for a lock path refused as too
// long before anything is created (TooLongError).
var ErrPathTooLong = errors.New("lock path too long")

// TooLongError is the error for a lock path refused as too long, and why.
// It matches ErrPathTooLong and lockfs.ErrNameTooLong (ENAMETOOLONG).
type TooLongError struct {
	// Why says what is too long, in plain words and without the path.
	Why string
}

func (e *TooLongError) Error() string { return "name too long: " + e.Why }

func (e *TooLongError) Is(target error) bool {
	return target == ErrPathTooLong || target == lockfs.ErrNameTooLong
}

// CheckLength refuses a lock path whose base name is longer than nameMax,
// or which leaves less than SidecarRoom bytes under pathMax for its
// sidecars' paths (docs/protocol.md, "Names"). A limit of 0 is none.
func CheckLength(path string, pathMax, nameMax int) error {
	if base := filepath.Base(path); nameMax > 0 && len(base) > nameMax {
		return &TooLongError{Why: fmt.Sprintf("the file name is %d bytes, over the %d this system takes", len(base), nameMax)}
	}
	if pathMax > 0 && len(path)+SidecarRoom > pathMax {
		return &TooLongError{Why: fmt.Sprintf("the path is %d bytes, over the %d a lock's path may have here (the system's %d, less %d for the lock's other files)",
			len(path), pathMax-SidecarRoom, pathMax, SidecarRoom)}
	}
	return nil
}

// GuardSuffix names the guard of a lock (see package stamplock).
const GuardSuffix = ".stale"

// Watched names the files, in the lock's directory, whose going away may
// free the lock at path, whichever mechanism holds it: what a waiter's
// wake-up source watches. The lock file goes when a file holder releases
// (or a SQLite holder with RemoveOnRelease), the mark when a SQLite holder
// releases, and the guard when a reclaim ends.
func Watched(path string) []string {
	base := filepath.Base(path)
	return []string{base, SidecarName(base, MarkSuffix), SidecarName(base, GuardSuffix)}
}
