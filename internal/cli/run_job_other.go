//go:build !linux

package cli

import (
	"os/exec"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// inheritLockUnless passes COMMAND nothing here: the lock lives as long
// as proclock (docs/command.md, "The lock and COMMAND's processes").
func inheritLockUnless(bool, *exec.Cmd, *platform.Platform, *proclock.Lock) error { return nil }
