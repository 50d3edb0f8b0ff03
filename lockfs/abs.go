package lockfs

import "path/filepath"

// Abs makes path absolute against the working directory (internal/fsx's
// Abser).
func (osFS) Abs(path string) (string, error) { return filepath.Abs(path) }
