//go:build !linux && !darwin && !windows && !freebsd && !wasip1 && !js

package platform

import (
	"errors"
	"fmt"
	"runtime"
)

// Elsewhere (plan9, the other BSDs, illumos, ...) this package
// does not know how to read a process's identity: Self fails, so the file
// mechanism refuses to run (it could not judge holders), while SQLite, where
// the OS has it, still locks. A host can inject its own Process instead.

func readSelf() (Identity, error) { return Identity{}, errUnsupported() }

func lookupPID(int) (PIDInfo, error) { return PIDInfo{}, errUnsupported() }

func errUnsupported() error {
	return fmt.Errorf("platform: process identity on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
