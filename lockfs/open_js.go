package lockfs

import (
	"io/fs"
	"os"
)

// openFile is os.OpenFile here.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
