package lockfs

import (
	"io/fs"

	"github.com/proclock/proclock/internal/fserr"
)

// NetworkFS reports the network filesystem dir is on, "" when none or
// where the system does not tell (but linux and darwin).
func (osFS) NetworkFS(dir string) (string, error) {
	if err := fserr.CheckPath("statfs", dir); err != nil {
		return "", err
	}
	kind, err := networkFS(dir)
	if err != nil {
		return "", &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return kind, nil
}
