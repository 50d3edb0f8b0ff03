package fserr

import "io/fs"

// CheckPath rejects an empty path with a *fs.PathError wrapping
// fs.ErrInvalid, the error every FS method of lockfs's OS and package fake
// gives for it (the os package would call it ENOENT).
func CheckPath(op, name string) error {
	if name == "" {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}
