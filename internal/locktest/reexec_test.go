package locktest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/proclock/proclock/internal/locktest"
)

func TestMain(m *testing.M) { locktest.Main(m) }

var (
	// echoRole prints its arguments and exits with their number.
	echoRole = locktest.NewRole("echo", func(args []string) int {
		fmt.Println(strings.Join(args, "|"))
		return len(args)
	})
	// nestRole runs echoRole with its arguments and prints what it said.
	nestRole = locktest.NewRole("nest", func(args []string) int {
		out, err := echoRole.Command(args...).Output()
		if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != len(args) {
			fmt.Fprintln(os.Stderr, "echo:", err)
			return 1
		}
		fmt.Print("nested ", string(out))
		return 0
	})
)

func skipWithoutProcesses(t *testing.T) {
	if runtime.GOOS == "wasip1" || runtime.GOOS == "js" {
		t.Skipf("%s cannot start processes", runtime.GOOS)
	}
}

// A role gets its arguments as they were given, and its result is the
// child's exit status.
func TestRoleArguments(t *testing.T) {
	skipWithoutProcesses(t)
	c := locktest.Start(t, echoRole.Command("a", "b c", "-test.run=x"))
	line, err := c.Line()
	if err != nil || line != "a|b c|-test.run=x" {
		t.Fatalf("echo said %q, %v; want its three arguments", line, err)
	}
	if ee, ok := errors.AsType[*exec.ExitError](c.End()); !ok || ee.ExitCode() != 3 {
		t.Fatalf("echo ended with %v; want exit status 3", c.Cmd.ProcessState)
	}
}

// A role can start another: the child's own role does not leak into its
// children.
func TestRoleStartsRole(t *testing.T) {
	skipWithoutProcesses(t)
	out := string(locktest.Output(t, nestRole.Command("x", "y")))
	if out != "nested x|y\n" {
		t.Fatalf("nest said %q; want %q", out, "nested x|y\n")
	}
}

// A process told to play a role its binary does not have fails, and runs
// no tests.
func TestUnknownRole(t *testing.T) {
	skipWithoutProcesses(t)
	cmd := echoRole.Command()
	for i, kv := range cmd.Env {
		if strings.HasPrefix(kv, "PROCLOCK_TEST_ROLE=") {
			cmd.Env[i] = "PROCLOCK_TEST_ROLE=no-such-role"
		}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "no-such-role") || len(out) != 0 {
		t.Fatalf("unknown role: %v, stdout %q, stderr %q; want exit 2 naming the role, nothing on stdout", err, out, stderr.String())
	}
}

// Wait may be called from several places (a test and its cleanup): it
// reaps once and gives every caller the same answer.
func TestChildWaitTwice(t *testing.T) {
	skipWithoutProcesses(t)
	c := locktest.Start(t, locktest.Block.Command())
	c.Kill()
	first, second := c.Wait(), c.Wait()
	if first == nil || first != second {
		t.Fatalf("Wait after Kill = %v, then %v; want one exit error twice", first, second)
	}
}
