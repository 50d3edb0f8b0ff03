package platform_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/proclock/proclock/platform"
)

// helperEnv, when set, makes the test binary a helper process for a test
// that needs a second process, instead of running the tests.
const helperEnv = "PROCLOCK_PLATFORM_TEST_HELPER"

const (
	helperBlock    = "block"    // wait until stdin closes, then exit 0
	helperLauncher = "launcher" // print Self().LauncherPID, then exit
	helperSelf     = "self"     // print Self() as JSON, then wait as block
)

// osHelpers are helpers of one OS's tests, by name: each runs, then the
// process waits as block.
var osHelpers = map[string]func() error{}

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case helperBlock:
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case helperSelf:
		id, err := platform.Native().Process.Self()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := json.NewEncoder(os.Stdout).Encode(id); err != nil {
			os.Exit(2)
		}
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case helperLauncher:
		id, err := platform.Native().Process.Self()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(id.LauncherPID)
		os.Exit(0)
	default:
		if fn, ok := osHelpers[os.Getenv(helperEnv)]; ok {
			if err := fn(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			io.Copy(io.Discard, os.Stdin)
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", helperEnv, os.Getenv(helperEnv))
		os.Exit(2)
	}
}

func nativeSelf(t *testing.T) platform.Identity {
	t.Helper()
	self, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatalf("Self: %v", err)
	}
	return self
}

// startPiped starts cmd with its stdin and stdout piped to the test.
func startPiped(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout
}
