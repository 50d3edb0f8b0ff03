package platform_test

import (
	"fmt"
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
