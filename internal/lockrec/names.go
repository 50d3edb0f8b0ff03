package lockrec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"unicode/utf8"

	"github.com/proclock/proclock/lockfs"
)

// NameMax is the longest name, in bytes, of a lock's sidecar: fixed, so
// that every process computes the same names (docs/protocol.md, "Names").
const NameMax = 255

// SidecarRoom is how much longer than the lock's path a sidecar's can be:
// the deepest guard's private name, ".stale.stale.stale.stale-<pid>-<random>".
const SidecarRoom = 64

// hashLen is how many hex digits of SHA-256 a shortened name carries.
const hashLen = 16

// Sidecar is the path of the sidecar named by suffix of the file at path.
func Sidecar(path, suffix string) string {
	dir, base := filepath.Split(path)
	return dir + SidecarName(base, suffix)
}

// SidecarName is base+suffix when it fits in NameMax bytes; else as much of
// base as fits (cut between UTF-8 characters), "~", 16 hex digits of the
// SHA-256 of base (two names that differ past the cut stay apart), suffix.
func SidecarName(base, suffix string) string {
	if len(base)+len(suffix) <= NameMax {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(base))
	keep := min(max(NameMax-len(suffix)-1-hashLen, 0), len(base))
	// At most UTFMax-1 bytes back: bytes that are no UTF-8 are cut anywhere.
	for back := 0; back < utf8.UTFMax-1 && keep > 0 && keep < len(base) && !utf8.RuneStart(base[keep]); back++ {
		keep--
	}
	return base[:keep] + "~" + hex.EncodeToString(sum[:hashLen/2]) + suffix
}

// ErrPathTooLong is matched by the error for a lock path refused as too
// long (TooLongError).
var ErrPathTooLong = errors.New("lock path too long")

// TooLongError is the error for a lock path refused as too long. It
// matches ErrPathTooLong and lockfs.ErrNameTooLong.
type TooLongError struct {
	Why string // what is too long, without the path
}

func (e *TooLongError) Error() string { return "name too long: " + e.Why }

func (e *TooLongError) Is(target error) bool {
	return target == ErrPathTooLong || target == lockfs.ErrNameTooLong
}

// CheckLength refuses a lock path whose base name is over nameMax, or which
// leaves its sidecars less than SidecarRoom under pathMax. 0 is no limit.
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

// GuardSuffix names the guard of a lock (package stamplock).
const GuardSuffix = ".stale"

// Watched names the files whose going away may free the lock at path,
// for a waiter to watch: the lock file, the mark, the guard.
func Watched(path string) []string {
	base := filepath.Base(path)
	return []string{base, SidecarName(base, MarkSuffix), SidecarName(base, GuardSuffix)}
}
