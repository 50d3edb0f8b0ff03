package cli

import "errors"

// jobControl: neither syscall nor x/sys/unix names WUNTRACED for aix, and
// its TIOCSPGRP does not fit x/sys/unix's ioctl helpers, so proclock
// keeps the terminal and does not follow COMMAND's stops there.
const jobControl = false

// waitStops: wait4 reports COMMAND's end only.
const waitStops = 0

// setForeground is not done on aix.
func setForeground(int, int) error { return errors.New("not supported on aix") }
