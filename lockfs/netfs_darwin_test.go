package lockfs

import "testing"

// The filesystems refused on darwin, by statfs f_fstypename, and some let
// through (docs/installation.md, "Network filesystems"). Built and vetted
// in CI, run only on a darwin machine.
func TestNetworkTypes(t *testing.T) {
	for name, refused := range map[string]bool{
		"nfs": true, "smbfs": true, "afpfs": true, "webdav": true, "cifs": true,
		"apfs": false, "hfs": false, "msdos": false, "macfuse": false,
	} {
		if networkTypes[name] != refused {
			t.Errorf("%s: refused %v; want %v", name, networkTypes[name], refused)
		}
	}
}
