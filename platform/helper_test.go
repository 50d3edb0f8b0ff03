package platform_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// Tests that need a second process re-execute this test binary in a role
// (locktest.NewRole): these, and locktest.Block, which waits until its
// stdin closes.
func TestMain(m *testing.M) { locktest.Main(m) }

var (
	// selfRole prints Self() as JSON, then waits as locktest.Block.
	selfRole = locktest.NewRole("self", func([]string) int {
		id, err := platform.Native().Process.Self()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := json.NewEncoder(os.Stdout).Encode(id); err != nil {
			return 2
		}
		io.Copy(io.Discard, os.Stdin)
		return 0
	})
	// launcherRole prints Self().LauncherPID, then exits.
	launcherRole = locktest.NewRole("launcher", func([]string) int {
		id, err := platform.Native().Process.Self()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(id.LauncherPID)
		return 0
	})
)

func nativeSelf(t *testing.T) platform.Identity {
	t.Helper()
	self, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatalf("Self: %v", err)
	}
	return self
}
