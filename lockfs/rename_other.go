//go:build !windows

package lockfs

import "os"

// rename is os.Rename: these systems rename over a file that is open.
func rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// inUse is false: these systems remove and rename files that are open.
func inUse(error) bool { return false }
