//go:build linux

package lockfs

import (
	"io/fs"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// DirNetworkFS is DirID and NetworkFS in one statx: the directory's
// identity and its unique mount id (linux 6.8 on). The filesystem of a
// mount id not met before is asked through the directory opened (its
// statx and fstatfs name one mount, whatever the path names by then), and
// remembered. Where statx or the unique mount id is missing, it is DirID
// and NetworkFS, one after the other.
func (o osFS) DirNetworkFS(dir string) (FileID, string, error) {
	if err := CheckPath("stat", dir); err != nil {
		return FileID{}, "", err
	}
	if !useStatx {
		return o.dirThenNetwork(dir)
	}
	var stx unix.Statx_t
	err := retryEINTR(func() error {
		return unix.Statx(unix.AT_FDCWD, dir, 0, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_MNT_ID_UNIQUE, &stx)
	})
	switch {
	case err != nil && statxMissing(err):
		return o.dirThenNetwork(dir)
	case err != nil:
		return FileID{}, "", &fs.PathError{Op: "stat", Path: dir, Err: err}
	case stx.Mode&unix.S_IFMT != unix.S_IFDIR:
		return FileID{}, "", &fs.PathError{Op: "stat", Path: dir, Err: syscall.ENOTDIR}
	}
	id := FileID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}
	if stx.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		kind, _ := o.NetworkFS(dir) // a kernel before 6.8
		return id, kind, nil
	}
	if kind, ok := mountKinds.get(stx.Mnt_id); ok {
		return id, kind, nil
	}
	kind, mnt, ok := networkFSOfMount(dir)
	if !ok {
		kind, _ = o.NetworkFS(dir)
		return id, kind, nil
	}
	mountKinds.put(mnt, kind)
	if mnt != stx.Mnt_id {
		// The path named another mount by then: told by the mount
		// it names now, which the next look remembers.
		kind, _ = o.NetworkFS(dir)
	}
	return id, kind, nil
}

// dirThenNetwork is DirNetworkFS without statx: DirID, then NetworkFS.
func (o osFS) dirThenNetwork(dir string) (FileID, string, error) {
	id, err := o.DirID(dir)
	if err != nil {
		return FileID{}, "", err
	}
	kind, _ := o.NetworkFS(dir)
	return id, kind, nil
}

// networkFSOfMount opens dir and tells the network filesystem it is on
// and its unique mount id, both of the one open directory; ok is false
// when it cannot.
func networkFSOfMount(dir string) (kind string, mnt uint64, ok bool) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, false
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID_UNIQUE, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID_UNIQUE == 0 {
		return "", 0, false
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return "", 0, false
	}
	return networkMagic[int64(st.Type)&0xffffffff], stx.Mnt_id, true
}

// mountKinds remembers the network filesystem ("" for none) of each
// unique mount id met, up to maxMountKinds of them (then it starts over).
var mountKinds = mountKindCache{kinds: map[uint64]string{}}

const maxMountKinds = 64

type mountKindCache struct {
	mu    sync.Mutex
	kinds map[uint64]string
}

func (c *mountKindCache) get(mnt uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kind, ok := c.kinds[mnt]
	return kind, ok
}

func (c *mountKindCache) put(mnt uint64, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.kinds) >= maxMountKinds {
		clear(c.kinds)
	}
	c.kinds[mnt] = kind
}
