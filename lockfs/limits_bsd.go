//go:build darwin || freebsd || netbsd || openbsd || dragonfly || illumos

package lockfs

// PATH_MAX and NAME_MAX of darwin, the BSDs and illumos (sys/syslimits.h,
// limits.h).
const (
	pathMax = 1024
	nameMax = 255
)
