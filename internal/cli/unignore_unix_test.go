//go:build unix

package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// unignoreSignals: run under nohup, or in the background of a shell
// without job control, this binary starts with SIGHUP or SIGINT ignored,
// and so would every proclock it runs, which keeps an ignored signal
// ignored (TestRunKeepsIgnoredSignals): the signal tests could not
// deliver theirs. A signal this process catches is back to its default in
// the processes it starts.
func unignoreSignals() {
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(sig) {
			signal.Notify(make(chan os.Signal, 1), sig)
		}
	}
}
