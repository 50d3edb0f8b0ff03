//go:build !linux

package cli

import "os/exec"

// inheritLockUnless passes COMMAND nothing here: the lock lives as long
// as proclock (docs/command.md, "The lock and COMMAND's processes").
func inheritLockUnless(bool, *exec.Cmd, Held) error { return nil }
