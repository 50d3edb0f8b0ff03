//go:build unix && !linux

package cli

import (
	"errors"
	"syscall"
)

// watch reports COMMAND's stops, continues and end on events until it has
// ended; it reaps COMMAND. cmd.Wait is never called: it cannot report
// stops.
func watch(pid int, events chan<- childEvent) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, waitStops, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		ev := childEvent{status: ws, err: err}
		events <- ev
		if ev.ended() {
			return
		}
	}
}
