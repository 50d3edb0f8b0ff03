//go:build !linux && !darwin && !windows && !freebsd && !wasip1 && !js

package platform

import (
	"errors"
	"fmt"
	"runtime"
)

// Elsewhere Self fails, so the file mechanism refuses to run (it could
// not judge holders); SQLite still locks. A host can inject a Process.

func readSelf() (Identity, error) { return Identity{}, errUnsupported() }

func lookupPID(int) (PIDInfo, error) { return PIDInfo{}, errUnsupported() }

func errUnsupported() error {
	return fmt.Errorf("platform: process identity on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
