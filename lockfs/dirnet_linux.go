//go:build linux

package lockfs

// DirNetworkFS is DirID, then NetworkFS: a statx and a statfs. Nothing
// is remembered between calls (docs/design.md, "Module state"): a
// mount's kind kept by its id would save the statfs, one system call.
func (o osFS) DirNetworkFS(dir string) (FileID, string, error) {
	id, err := o.DirID(dir)
	if err != nil {
		return FileID{}, "", err
	}
	kind, _ := o.NetworkFS(dir)
	return id, kind, nil
}
