package lockfs

// PATH_MAX and NAME_MAX of linux (include/uapi/linux/limits.h).
const (
	pathMax = 4096
	nameMax = 255
)
