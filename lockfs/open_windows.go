package lockfs

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// openFile is os.OpenFile sharing delete too, so that a lock can be
// reclaimed, a stale one removed or a .holder replaced while another has
// it open. Handles are not inherited.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	h, err := createFile(name, flag, perm)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(h), name)
	if flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	return f, nil
}

// appendAccess is os.OpenFile's for O_APPEND: FILE_APPEND_DATA without
// FILE_WRITE_DATA.
const appendAccess = windows.FILE_APPEND_DATA | windows.FILE_WRITE_ATTRIBUTES |
	windows.FILE_WRITE_EA | windows.STANDARD_RIGHTS_WRITE | windows.SYNCHRONIZE

// createFile maps os.OpenFile's flags to CreateFile's as package syscall
// does.
func createFile(name string, flag int, perm fs.FileMode) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return windows.InvalidHandle, err
	}
	access := accessOf(flag)
	attrs := uint32(windows.FILE_ATTRIBUTE_NORMAL)
	if perm&0o200 == 0 {
		attrs = windows.FILE_ATTRIBUTE_READONLY
	}
	readOnly := flag&(os.O_WRONLY|os.O_RDWR) == 0
	if readOnly {
		attrs |= windows.FILE_FLAG_BACKUP_SEMANTICS // directories open too
	}
	if flag&os.O_SYNC != 0 {
		attrs |= windows.FILE_FLAG_WRITE_THROUGH
	}
	var disposition uint32
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		disposition = windows.CREATE_NEW
		attrs |= windows.FILE_FLAG_OPEN_REPARSE_POINT // never through a symlink
	case flag&os.O_CREATE != 0:
		disposition = windows.OPEN_ALWAYS
	default:
		disposition = windows.OPEN_EXISTING
	}
	const share = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE
	h, err := windows.CreateFile(p, access, share, nil, disposition, attrs, 0)
	if err == windows.ERROR_ACCESS_DENIED && !readOnly {
		// A directory cannot be opened for writing: say so as os does.
		if a, aerr := windows.GetFileAttributes(p); aerr == nil && a&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
			err = syscall.EISDIR
		}
	}
	return h, err
}

// accessOf is CreateFile's access for os.OpenFile's flag.
func accessOf(flag int) uint32 {
	var access uint32
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		access = windows.GENERIC_READ
	case os.O_WRONLY:
		access = windows.GENERIC_WRITE
	case os.O_RDWR:
		access = windows.GENERIC_READ | windows.GENERIC_WRITE
	}
	if flag&os.O_CREATE != 0 {
		access |= windows.GENERIC_WRITE
	}
	if flag&os.O_APPEND != 0 {
		if flag&os.O_TRUNC == 0 {
			access &^= windows.GENERIC_WRITE
		}
		access |= appendAccess
	}
	return access
}
