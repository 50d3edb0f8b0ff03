package fsx

import "github.com/proclock/proclock/lockfs"

// DirNetworkFS is an optional power of an FS: DirID and NetworkFS of one
// directory in one call.
type DirNetworkFS interface {
	// DirNetworkFS returns what DirID returns, and the network
	// filesystem's type as lockfs.NetworkFS does ("" when it cannot tell).
	DirNetworkFS(dir string) (lockfs.FileID, string, error)
}
