// Package fserr holds the errors of an FS that proclock tells apart and
// that lockfs itself gives: a package below lockfs, so that lockfs's OS
// and package fake fail with the same values, and internal/fsx matches
// them.
package fserr

import "errors"

// ErrNoReplaceUnsupported is matched by the error of a RenameNoReplace
// (fsx.NoReplaceRenamer) that the filesystem or the kernel does not offer;
// it matches errors.ErrUnsupported too.
var ErrNoReplaceUnsupported error = noReplaceUnsupported{}

type noReplaceUnsupported struct{}

func (noReplaceUnsupported) Error() string {
	return "renaming without replacing is not supported here"
}

func (noReplaceUnsupported) Is(target error) bool { return target == errors.ErrUnsupported }

// NoReplaceUnsupported is cause, the system's answer to a rename without
// replacing (EINVAL, ENOSYS, EPERM), as a NoReplaceRenamer fails with it
// where the rename is not offered: matching ErrNoReplaceUnsupported, and
// cause.
func NoReplaceUnsupported(cause error) error { return unsupportedNoReplace{cause} }

// unsupportedNoReplace is NoReplaceUnsupported's error.
type unsupportedNoReplace struct{ cause error }

func (e unsupportedNoReplace) Error() string {
	return "renaming without replacing is not supported here: " + e.cause.Error()
}

func (e unsupportedNoReplace) Unwrap() []error {
	return []error{ErrNoReplaceUnsupported, e.cause}
}
