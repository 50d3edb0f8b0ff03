//go:build windows

package lockfs

import (
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// fileIDByName opens the entry itself, not a reparse point's target,
// asking for no access and sharing everything, so that it never stands in
// the way of another process's open, rename or delete.
func fileIDByName(name string) (FileID, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return FileID{}, err
	}
	h, err := windows.CreateFile(p, 0,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return FileID{}, err
	}
	defer windows.CloseHandle(h)
	return fileIDOfHandle(h)
}

func fileIDOfOS(f *os.File) (FileID, error) {
	var id FileID
	err := withFd(f, func(fd uintptr) (err error) {
		id, err = fileIDOfHandle(windows.Handle(fd))
		return err
	})
	return id, err
}

// fileIDOfHandle takes the volume serial number and the file index, as
// os.SameFile does; NTFS's carries a sequence number, so a reused record
// gets another even when tunneling hands on the old creation time.
func fileIDOfHandle(h windows.Handle) (FileID, error) {
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &d); err != nil {
		return FileID{}, err
	}
	id := FileID{
		Dev: uint64(d.VolumeSerialNumber),
		Ino: uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow),
	}
	if d.CreationTime != (windows.Filetime{}) {
		id.Birth = time.Unix(0, d.CreationTime.Nanoseconds())
		id.HasBirth = true
	}
	return id, nil
}
