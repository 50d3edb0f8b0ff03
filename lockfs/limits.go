package lockfs

// PathLimits is PATH_MAX-1 and NAME_MAX on linux, darwin, the BSDs and
// illumos; 0 (not known) elsewhere (internal/fsx's PathLimits).
func (osFS) PathLimits() (path, name int) { return pathMax - 1, nameMax }
