package lockfs

import "testing"

// The filesystems refused on linux, by statfs f_type, and some let
// through: local ones, and FUSE and 9p, which cannot tell a network mount
// from a local one (docs/installation.md, "Network filesystems").
func TestNetworkMagic(t *testing.T) {
	for _, tc := range []struct {
		magic int64
		want  string
	}{
		{0x6969, "nfs"},
		{0x517b, "smb"},
		{0xff534d42, "cifs"},
		{0xfe534d42, "smb2"},
		{0x5346414f, "afs"},
		{0x73757245, "coda"},
		{0x564c, "ncp"},
		{0x00c36400, "ceph"},
		{0xef53, ""},     // ext2, ext3, ext4
		{0x58465342, ""}, // xfs
		{0x9123683e, ""}, // btrfs
		{0x01021994, ""}, // tmpfs
		{0x794c7630, ""}, // overlayfs (containers)
		{0x65735546, ""}, // fuse (sshfs among others)
		{0x01021997, ""}, // 9p (VM shares)
	} {
		if got := networkMagic[tc.magic]; got != tc.want {
			t.Errorf("f_type %#x: %q; want %q", tc.magic, got, tc.want)
		}
	}
}
