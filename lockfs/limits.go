package lockfs

import "runtime"

// PathLimits is PATH_MAX less its NUL and NAME_MAX where they are fixed
// (linux/limits.h; sys/syslimits.h of darwin, the BSDs and illumos); 0,
// not known, elsewhere: windows takes long paths where enabled, and a wasm
// host's filesystem is the host's (internal/fsx's PathLimits).
func (osFS) PathLimits() (path, name int) {
	switch runtime.GOOS {
	case "linux", "android":
		return 4095, 255
	case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly", "illumos":
		return 1023, 255
	}
	return 0, 0
}
