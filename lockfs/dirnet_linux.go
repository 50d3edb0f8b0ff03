//go:build linux

package lockfs

// DirNetworkFS is DirID, then NetworkFS (fsx.DirNetworkFS).
func (o osFS) DirNetworkFS(dir string) (FileID, string, error) {
	id, err := o.DirID(dir)
	if err != nil {
		return FileID{}, "", err
	}
	kind, _ := o.NetworkFS(dir)
	return id, kind, nil
}
