//go:build wasip1 || js

package platform

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// A wasm guest's identity is its host process's, read through the /proc
// the host mounts (docs/wasm.md). A pid exists when its stat file does.

func readSelf() (Identity, error) { return readSelfFrom(nativeProc) }

// readSelfFrom reads the identity of the host process that mounted p.
func readSelfFrom(p procfs) (Identity, error) {
	host, err := p.hostname()
	if err == nil {
		var id Identity
		if id, err = p.identity(host, 0); err == nil {
			return id, nil
		}
	}
	return Identity{}, fmt.Errorf("platform: identity of the %s host process from %s: %w (%w): %s", runtime.GOOS, p, err, errors.ErrUnsupported, errNoProcHint)
}

// errNoProcHint says what makes a wasm guest's identity readable.
const errNoProcHint = "mount /proc read-only into the guest, or set Platform.Process"

func lookupPID(pid int) (PIDInfo, error) { return lookupFrom(nativeProc, nativeClock(), pid) }

// lookupFrom tells of pid, positive (osProcess.Lookup), as p shows it,
// through the reader's clock.
func lookupFrom(p procfs, clock timeClock, pid int) (PIDInfo, error) {
	st, err := p.stat(strconv.Itoa(pid))
	switch {
	case gone(err):
		return PIDInfo{}, nil
	case err != nil:
		return PIDInfo{}, fmt.Errorf("platform: lookup of pid %d: %w", pid, err)
	case p.exited(pid, st):
		return PIDInfo{}, nil
	}
	return PIDInfo{Exists: true, StartTime: clock.hostTicks(st.startTime)}, nil
}

// readProcFile reads a small /proc file.
func readProcFile(name string) ([]byte, error) { return os.ReadFile(name) }
