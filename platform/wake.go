package platform

import (
	"context"
	"fmt"
	"time"
)

// Waker is an optional power of a platform: it wakes a waiting Acquire as
// soon as the lock it waits for may have been let go, instead of after its
// back-off. Platform.Wake holds one; nil means waits sleep on the clock.
type Waker interface {
	// Wait returns, saying why, when one of names (base names in the
	// directory dir) is removed or renamed away; when process pid, of
	// this host and pid namespace, exits (or is gone already); or when d
	// has passed on the platform's clock. It returns ctx.Err() when ctx
	// ends first; any other error (a killed fake process) ends the wait
	// as ctx's would.
	//
	// Nothing else wakes it: a name created is someone taking the lock,
	// and waiters open and close the lock's files on every attempt, so
	// waiters woken by that would wake each other for ever. Wait may wake
	// for nothing, or miss an event at the cost of d. Nothing it starts
	// or opens outlives it.
	Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (Wakeup, error)
}

// Wakeup says why a Waker's Wait returned.
type Wakeup int

const (
	// WakeTimeout: d passed, and nothing watched was seen to change.
	WakeTimeout Wakeup = iota
	// WakeChange: a watched name went away (or the directory did, or
	// events were lost).
	WakeChange
	// WakeExit: the watched process exited, or was gone already.
	WakeExit
)

// String returns the wake-up as a word: "timeout", "change" or "exit".
func (w Wakeup) String() string {
	if w < 0 || int(w) >= len(wakeupWords) {
		return fmt.Sprintf("Wakeup(%d)", int(w))
	}
	return wakeupWords[w]
}

var wakeupWords = [...]string{WakeTimeout: "timeout", WakeChange: "change", WakeExit: "exit"}
