package fsx

import "os"

// Flags for creating a file that must not exist yet. O_EXCL with O_CREATE
// never follows a symlink at the last element, on every system.
const CreateExcl = os.O_WRONLY | os.O_CREATE | os.O_EXCL
