package lockfs

import "io/fs"

// statIDer is a File that tells its FileInfo and its FileID in one call.
type statIDer interface {
	statID() (fs.FileInfo, FileID, error)
}
