//go:build proclockhooks && linux

package cli

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// pauseAt stops proclock at step when pauseEnv names it: it says so on
// stdout and waits for its end.
func pauseAt(step string) {
	if os.Getenv(pauseEnv) != step {
		return
	}
	fmt.Fprintf(os.Stdout, "proclock: at %s\n", step)
	for {
		unix.Pause()
	}
}
