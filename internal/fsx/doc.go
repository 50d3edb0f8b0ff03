// Package fsx is what proclock's own packages do with a lockfs.FS beyond
// its methods: optional powers found by type assertion (an FS has one by
// having its methods), helpers that fall back where an FS has none, and
// what an FS's errors say.
package fsx

import "os"

// CreateExcl are the flags for creating a file that must not exist yet.
// O_EXCL with O_CREATE never follows a symlink at the last element.
const CreateExcl = os.O_WRONLY | os.O_CREATE | os.O_EXCL
