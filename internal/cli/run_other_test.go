//go:build !unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
)

// detach: nothing to do where there are no process groups to leave.
func detach(*exec.Cmd) {}

// helperMainOS: the helper modes that need unix are not here.
func helperMainOS(args []string) int {
	fmt.Fprintln(os.Stderr, "unknown helper mode", args[0])
	return 2
}
