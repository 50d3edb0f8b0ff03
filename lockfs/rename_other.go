//go:build !windows

package lockfs

import "os"

// rename is os.Rename: these systems rename over an open file.
func rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// inUse is false: these systems remove and rename open files.
func inUse(error) bool { return false }
