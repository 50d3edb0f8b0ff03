package lockfs

import "errors"

// NoReplaceRenamer is an optional power of an FS: renaming a file to a
// name only while nothing is there, in one step (linux's renameat2 with
// RENAME_NOREPLACE). A record written whole into a temporary file takes
// its name so (lockrec.CreateWhole): one system call where a link and a
// removal take two, and the file's open descriptors then show its name.
// OS has it on linux; package fake's FS has it too.
type NoReplaceRenamer interface {
	// RenameNoReplace moves oldname to newname, failing with an error
	// matching fs.ErrExist when newname exists (a symlink there
	// included, never followed), as Link does. Where the filesystem or
	// the kernel cannot (EINVAL, ENOSYS, a seccomp filter's EPERM), it
	// fails with an error matching ErrNoReplaceUnsupported, having done
	// nothing. It fails as Rename does otherwise, with an *os.LinkError.
	RenameNoReplace(oldname, newname string) error
}

// ErrNoReplaceUnsupported is matched by the error of a RenameNoReplace
// that the filesystem or the kernel does not offer; it matches
// errors.ErrUnsupported too.
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
