package lockfs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// Telling a file from the one that replaced it at the same path: FileID
// names the file, not the path.
func ExampleFS_FileID() {
	fsys := lockfs.OS()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "app.lock")

	f, err := fsys.OpenFile(name, fsx.CreateExcl, 0o644)
	if err != nil {
		fmt.Println(err)
		return
	}
	f.Close()
	before, _ := fsys.FileID(name)

	// The old file is moved aside, not removed, so that no new file can be
	// given its identity (a removed file's inode number is soon reused).
	fsys.Rename(name, name+".old")
	g, err := fsys.OpenFile(name, fsx.CreateExcl, 0o644)
	if err != nil {
		fmt.Println(err)
		return
	}
	g.Close()
	after, _ := fsys.FileID(name)
	moved, _ := fsys.FileID(name + ".old")

	fmt.Println("same file:", before.Same(after))
	fmt.Println("moved file is the old one:", before.Same(moved))
	// Output:
	// same file: false
	// moved file is the old one: true
}
