package fsx

import (
	"path/filepath"

	"github.com/proclock/proclock/lockfs"
)

// Abser is an optional power of an FS: a path made absolute against the
// process's working directory. A lock judges its files by the path made
// absolute when it was taken, so that a process that changes its working
// directory while it holds a lock taken by a relative path still looks at
// the files it locked (docs/protocol.md, "Release acts on what it
// locked"). lockfs.OS has it.
type Abser interface {
	// Abs is path made absolute (filepath.Abs).
	Abs(path string) (string, error)
}

// Abs is path made absolute through fsys's Abser; path itself when fsys
// has none (an FS with no working directory, where every path is
// absolute), when it is absolute already, or when it cannot be made so
// (the working directory removed).
func Abs(fsys lockfs.FS, path string) string {
	a, ok := fsys.(Abser)
	if !ok || filepath.IsAbs(path) {
		return path
	}
	abs, err := a.Abs(path)
	if err != nil {
		return path
	}
	return abs
}
