package lockfs

import "golang.org/x/sys/unix"

// networkTypes are the filesystems, by f_fstypename, whose locks cannot be
// trusted.
var networkTypes = map[string]bool{"nfs": true, "smbfs": true, "afpfs": true, "webdav": true, "cifs": true}

func networkFS(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	name := unix.ByteSliceToString(st.Fstypename[:])
	if networkTypes[name] {
		return name, nil
	}
	return "", nil
}
