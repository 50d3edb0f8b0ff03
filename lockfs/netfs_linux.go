package lockfs

import "golang.org/x/sys/unix"

// networkMagic names the filesystems, by statfs f_type, whose locks cannot
// be trusted. The numbers are the kernel's (include/uapi/linux/magic.h and
// the filesystems' sources). FUSE is left out: it cannot tell a network
// filesystem (sshfs) from a local one, nor can 9p (VM shares, sandboxes).
var networkMagic = map[int64]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x5346414f: "afs",
	0x73757245: "coda",
	0x564c:     "ncp",
	0x00c36400: "ceph",
}

func networkFS(dir string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", err
	}
	return networkMagic[int64(st.Type)&0xffffffff], nil
}
