//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || illumos)

package lockfs

// No fixed limits known here (windows takes long paths where enabled; a
// wasm host's filesystem is the host's): PathLimits reports 0 for both
// (pathMax counts the NUL).
const (
	pathMax = 1
	nameMax = 0
)
