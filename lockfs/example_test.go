package lockfs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/proclock/proclock/lockfs"
)

// Telling a file from the one that replaced it at the same path: FileID
// names the file, not the path.
func ExampleFS_FileID() {
	fsys := lockfs.OS()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "app.lock")

	f, _ := fsys.OpenFile(name, lockfs.CreateExcl, 0o644)
	defer f.Close() // kept open: its inode cannot be reused meanwhile
	before, _ := fsys.FileIDOf(f)

	fsys.Remove(name)
	g, _ := fsys.OpenFile(name, lockfs.CreateExcl, 0o644)
	g.Close()
	after, _ := fsys.FileID(name)

	fmt.Println("same file:", before.Same(after))
	// Output:
	// same file: false
}
