// Package fserr holds the errors that lockfs's OS and package fake both
// give, below lockfs so that both fail with the same values.
package fserr

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrNoReplaceUnsupported is matched by the error of a RenameNoReplace
// that the filesystem or the kernel does not offer; it matches
// errors.ErrUnsupported too.
var ErrNoReplaceUnsupported error = noReplaceUnsupported{}

type noReplaceUnsupported struct{}

func (noReplaceUnsupported) Error() string {
	return "renaming without replacing is not supported here"
}

func (noReplaceUnsupported) Is(target error) bool { return target == errors.ErrUnsupported }

// NoReplaceUnsupported is cause, the system's refusal of a rename without
// replacing, as an error matching both it and ErrNoReplaceUnsupported.
func NoReplaceUnsupported(cause error) error {
	return fmt.Errorf("%w: %w", ErrNoReplaceUnsupported, cause)
}

// CheckPath rejects an empty path with a *fs.PathError wrapping
// fs.ErrInvalid, as every FS method of lockfs's OS and package fake does
// (the os package would say ENOENT).
func CheckPath(op, name string) error {
	if name == "" {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}
