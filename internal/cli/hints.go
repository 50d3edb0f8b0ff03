package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/lockfs"
)

// The library words a refused path in plain words, the same for every
// caller. The command can tell a user more about what is at the path, and
// what to write instead, where a line converted from flock(1) is refused
// (docs/command.md, "Refused forms"); run and status say the same of one
// path.

// noted adds note, in parentheses, to err's line; err as it is when note
// is "".
func noted(err error, note string) error {
	if note == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, note)
}

// pathNote says more of path, where err refused it: a directory, which
// flock(1) locks and proclock does not, or a symlink, which proclock never
// follows; "" for anything else.
func pathNote(path string, err error) string {
	switch {
	case errors.Is(err, lockfs.ErrIsDir) && isDir(path):
		return "flock(1) locks a directory itself; a proclock lock is a file: lock a file of its own, such as one beside the directory"
	case errors.Is(err, proclock.ErrNotLockFile):
		return symlinkNote(path)
	}
	return ""
}

// symlinkNote says that path is a symlink, where it is one, and whether
// what it names exists: a dangling link is most likely meant to name a
// lock file still to come, which proclock will not create through it.
func symlinkNote(path string) string {
	info, err := os.Lstat(path)
	if err != nil || info.Mode()&fs.ModeSymlink == 0 {
		return ""
	}
	const why = "a lock is the file at the lock's path, never what a symlink there names"
	target, err := os.Readlink(path)
	switch {
	case err != nil:
		return "it is a symlink: " + why
	case isMissing(path):
		return fmt.Sprintf("it is a dangling symlink, to %q, which does not exist: %s", target, why)
	}
	return fmt.Sprintf("it is a symlink, to %q: %s", target, why)
}

// isDir reports whether path names a directory, following symlinks.
func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// isMissing reports whether what path names, following symlinks, does not
// exist.
func isMissing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// ownScriptNote says, when the file at path is COMMAND's program or a
// file COMMAND is given (flock(1)'s idiom of locking the script itself:
// flock -n "$0" "$0"), what to lock instead; "" otherwise.
func ownScriptNote(path string, command []string) string {
	locked, err := os.Stat(path)
	if err != nil || !locked.Mode().IsRegular() {
		return ""
	}
	names := []string{}
	if found, err := exec.LookPath(command[0]); err == nil {
		names = append(names, found)
	}
	for _, arg := range command {
		names = append(names, arg)
		names = append(names, strings.Fields(arg)...) // -c '"$0" --full'
	}
	for _, name := range names {
		if info, err := os.Stat(name); err == nil && os.SameFile(locked, info) {
			return "it is COMMAND's own script: " + ownScriptFix
		}
	}
	return ""
}

// ownScriptFix is what to do instead of locking COMMAND's own script.
const ownScriptFix = "flock(1)'s idiom of locking the script itself does not carry over, as proclock never writes a user's file; " +
	`lock a path of its own, such as "$0.lock": proclock run -n "$0.lock" -- "$0" (docs/command.md, "Refused forms")`
