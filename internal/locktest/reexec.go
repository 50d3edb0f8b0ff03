package locktest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// roleEnv, in a process's environment, names the role the test binary
// plays instead of running its tests.
const roleEnv = "PROCLOCK_TEST_ROLE"

// noTests is the first argument of every role's command line.
const noTests = "-test.run=^$"

// A Role is something a re-executed test binary does instead of running
// tests: run gets the arguments its parent gave and returns the exit
// status.
type Role struct {
	name string
	run  func(args []string) int
}

var roles = map[string]*Role{}

// NewRole registers a role. Call it in a package-level variable
// declaration, so that the role is known when TestMain dispatches; two
// roles of one name are a mistake in the tests, and NewRole panics.
func NewRole(name string, run func(args []string) int) *Role {
	if roles[name] != nil {
		panic("locktest: two roles named " + name)
	}
	r := &Role{name: name, run: run}
	roles[name] = r
	return r
}

// Roles every package has.
var (
	// exitRole ends at once, with status 0: its pid, once reaped, is a
	// process that is gone (see DeadPID).
	exitRole = NewRole("exit", func([]string) int { return 0 })
	// Block waits until its stdin is closed, then exits 0.
	Block = NewRole("block", func([]string) int {
		io.Copy(io.Discard, os.Stdin)
		return 0
	})
)

// Main runs m's tests, or plays the role this process was started for,
// and exits with their status. A package whose tests start roles calls it
// as its TestMain:
//
//	func TestMain(m *testing.M) { locktest.Main(m) }
func Main(m *testing.M) {
	MaybePlay()
	os.Exit(m.Run())
}

// MaybePlay plays the role named in this process's environment and exits
// with its status; in a process started to run tests it returns at once.
// A TestMain that does more than Main calls it first.
func MaybePlay() {
	name := os.Getenv(roleEnv)
	if name == "" {
		return
	}
	r := roles[name]
	if r == nil {
		fmt.Fprintf(os.Stderr, "locktest: %s=%q names no role of this test binary\n", roleEnv, name)
		os.Exit(2)
	}
	os.Exit(r.run(Args()))
}

// Args are the arguments of the role this process plays: its command
// line without the test binary's own flag. A role whose work must happen
// in init (on the main thread) reads them there.
func Args() []string {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == noTests {
		args = args[1:]
	}
	return args
}

// Self is the path of this test binary.
func Self() string {
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return os.Args[0]
}

// Command is this test binary, to be started to play r with args.
func (r *Role) Command(args ...string) *exec.Cmd { return r.CommandAt(Self(), args...) }

// CommandAt is the test binary at exe (a copy of this one, see SharedCopy)
// to be started to play r with args.
func (r *Role) CommandAt(exe string, args ...string) *exec.Cmd {
	cmd := exec.Command(exe, append([]string{noTests}, args...)...)
	cmd.Env = r.Environ(os.Environ())
	return cmd
}

// Argv is the command line of this test binary playing r with args, for
// a child that another program starts (one that passes its environment
// on, given Environ).
func (r *Role) Argv(args ...string) []string {
	return append([]string{Self(), noTests}, args...)
}

// Environ is env for a process that plays r (or passes its environment on
// to one): roleEnv set to r, and the race detector's second of sleep at
// exit turned off.
func (r *Role) Environ(env []string) []string {
	kept := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, roleEnv+"=") {
			kept = append(kept, kv)
		}
	}
	return append(kept, roleEnv+"="+r.name, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// A Child is a process a test started, with its stdin and stdout piped to
// the test (those the command did not set already).
type Child struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser // nil when the command set its own
	Stdout *bufio.Reader  // nil when the command set its own

	wait    sync.Once
	waitErr error
}

// Start starts cmd, piping its stdin and stdout to the test unless cmd
// sets them, and kills and reaps it in t's cleanup; it fails t if cmd
// cannot start.
func Start(t testing.TB, cmd *exec.Cmd) *Child {
	t.Helper()
	c, err := TryStart(t, cmd)
	if err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	return c
}

// TryStart is Start, but returns the error of a command that cannot start
// (for a test that skips where it cannot).
func TryStart(t testing.TB, cmd *exec.Cmd) (*Child, error) {
	t.Helper()
	c := &Child{Cmd: cmd}
	var err error
	if cmd.Stdin == nil {
		if c.Stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	if cmd.Stdout == nil {
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		c.Stdout = bufio.NewReader(out)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(c.Kill)
	return c, nil
}

// Pid is the child's pid.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// Line reads the child's next line of output, without its newline.
func (c *Child) Line() (string, error) {
	line, err := c.Stdout.ReadString('\n')
	if err == nil {
		line = line[:len(line)-1]
	}
	return line, err
}

// Wait waits for the child to exit and releases its resources; it may be
// called more than once, from any goroutine, and returns the first call's
// error every time.
func (c *Child) Wait() error {
	c.wait.Do(func() { c.waitErr = c.Cmd.Wait() })
	return c.waitErr
}

// End closes the child's stdin, which tells a role waiting on it to exit,
// and waits for the child.
func (c *Child) End() error {
	if c.Stdin != nil {
		c.Stdin.Close()
	}
	return c.Wait()
}

// Kill kills the child (SIGKILL, or TerminateProcess) and reaps it; a
// child that has exited is only reaped.
func (c *Child) Kill() {
	c.Cmd.Process.Kill()
	c.Wait()
}

// Output runs cmd to its end and returns its stdout; it fails t with the
// child's stderr if the child cannot run or exits with a failure.
func Output(t testing.TB, cmd *exec.Cmd) []byte {
	t.Helper()
	var stderr strings.Builder
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v; stderr: %s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return out
}

// DeadPID is the pid of a child that has exited and been reaped, as a
// holder killed with kill -9 is to the next process. The package's
// TestMain must dispatch roles (Main).
func DeadPID(t testing.TB) int {
	t.Helper()
	cmd := exitRole.Command()
	Output(t, cmd)
	return cmd.Process.Pid
}
