package lockfs

import "io/fs"

// KeptLooker is an optional power of an FS: a look (OpenLook) at a file
// that is looked at again and again, as IsHeld in a watchdog's loop looks
// at a held lock's file. Its descriptor is kept for a short while after
// Close, and the next look at the same name reuses it when the name still
// names that file: one stat by name where an open, a stat and a close
// were. OS has it on linux (lookkeep_linux.go).
type KeptLooker interface {
	// OpenKeptLook is OpenLook, its descriptor kept after Close.
	OpenKeptLook(name string) (File, error)
}

// CloseKeptLooks closes the descriptors that OpenKeptLook keeps between
// looks (they close by themselves within 2 s of their last look): for a
// program about to unmount a filesystem it probed locks on, or one that
// counts its descriptors. Later looks keep descriptors again.
func CloseKeptLooks() { closeKeptLooks() }

// KeptFile is a File of OpenKeptLook (on linux) that can tell a look
// whether its descriptor, kept from an earlier look, still stands for the
// file at its name, and carry what a look learnt to the next.
type KeptFile interface {
	File
	// Memo is what the last look of the descriptor left with it
	// (SetMemo); nil when the descriptor was opened for this look.
	Memo() any
	// SetMemo leaves v with the descriptor for the next look, before
	// Close.
	SetMemo(v any)
	// StatName is a stat of the file's name, a symlink not followed;
	// same tells whether the name still names this very file, unchanged
	// in its owner, mode and change time. Where the descriptor was kept,
	// StatID is StatName's, and fails unless same.
	StatName() (info fs.FileInfo, id FileID, same bool, err error)
	// Forget closes the file without keeping its descriptor.
	Forget() error
}

// OpenKeptLook opens name for a look through fsys's KeptLooker, or with
// internal/fsx's OpenLook where it has none.
func OpenKeptLook(fsys FS, name string) (File, error) {
	if kl, ok := fsys.(KeptLooker); ok {
		return kl.OpenKeptLook(name)
	}
	if lo, ok := fsys.(interface{ OpenLook(string) (File, error) }); ok {
		return lo.OpenLook(name)
	}
	return fsys.OpenNoFollow(name)
}

// statIDer is a File that tells its FileInfo and its FileID in one call.
type statIDer interface {
	statID() (fs.FileInfo, FileID, error)
}
