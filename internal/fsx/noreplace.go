package fsx

// NoReplaceRenamer is an optional power of an FS: renaming a file to a
// name only while nothing is there, in one step (linux's renameat2 with
// RENAME_NOREPLACE). A record written whole into a temporary file takes
// its name so (lockrec.CreateWhole): one system call where a link and a
// removal take two, and the file's open descriptors then show its name.
// lockfs.OS has it on linux; package fake's FS has it too.
type NoReplaceRenamer interface {
	// RenameNoReplace moves oldname to newname, failing with an error
	// matching fs.ErrExist when newname exists (a symlink there
	// included, never followed), as Link does. Where the filesystem or
	// the kernel cannot (EINVAL, ENOSYS, a seccomp filter's EPERM), it
	// fails with an error matching fserr.ErrNoReplaceUnsupported, having
	// done nothing. It fails as Rename does otherwise, with an *os.LinkError.
	RenameNoReplace(oldname, newname string) error
}
