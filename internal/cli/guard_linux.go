package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// COMMAND's guard (docs/command.md, "The lock and COMMAND's processes"):
// no process of COMMAND's group may run on beside the lock's next holder
// once proclock is killed (SIGKILL, the OOM killer). The kernel's locks
// on the inherited descriptor keep native processes out, but a wasm
// guest sees none of them, a process of the job that closed descriptor
// 3 (or was never given it: -o) holds nothing, and a cluster lock (a
// lease) has nothing the job holds at all: the guard adds to every lock. So proclock run starts a guard, proclock itself again
// in a hidden mode (guardArg):
//
//   - detached as a daemon is (through a launcher that exits at once), in
//     a session and process group of its own: it is no child of
//     proclock, so proclock's wait for the job's processes does not wait
//     for it, and no signal of the terminal or of proclock's group
//     reaches it;
//   - started while proclock waits for the lock, so that its start costs
//     `run` as little time as it can; with -n only once the lock is
//     taken, as a -n that finds it held has nothing to guard, and its
//     one try hides little of the start: before COMMAND starts, proclock
//     waits for the launcher's exit (the guard then runs, reparented
//     away from proclock), not for any word of the guard: the guard reads
//     whatever proclock sent before it died (startGuard, armed);
//   - it holds one end of a socket pair whose other end only proclock
//     holds (close-on-exec: COMMAND does not inherit it); proclock sends
//     it a pidfd of COMMAND, taken when COMMAND was created (clone3), and
//     "done" once the job is over;
//   - the socket's end without "done" is proclock's death: the guard
//     sends SIGKILL to COMMAND's process group through that pidfd
//     (PIDFD_SIGNAL_PROCESS_GROUP, linux 6.9): the kernel names the group
//     by COMMAND's own struct pid, never by a number another group may
//     have been given since, so an unrelated group is never hit, even
//     when COMMAND itself has long exited and its pid was reused. On an
//     older kernel the group is killed by its id only while COMMAND (its
//     leader) is not yet reaped, which keeps the id COMMAND's.
//
// A process that left COMMAND's group (setsid, setpgid: a daemon) is not
// reached; on linux it keeps the kernel's locks (natives stay out) while
// it keeps descriptor 3.

// guardArg is the first argument of proclock re-executed as COMMAND's
// guard; Main handles it before anything else.
const guardArg = "--proclock-internal-guard"

// guardHasIt: the guard exists on this system.
const guardHasIt = true

// guard is proclock's end of its guard's socket; nil when there is none.
type guard struct {
	conn *os.File // in the runtime's poller: a read waits for the guard's end
	fd   int
	done atomic.Bool
	// launched gets the launcher's end: nil once it has started the
	// guard, which holds the socket's other end. ended is closed then.
	launched chan error
	ended    chan struct{}
}

// startGuard starts COMMAND's guard, and returns at once: the launcher
// starts while proclock takes the lock, and armed waits for it before
// COMMAND starts. A guard that cannot be started is told on w and run
// goes on without it: COMMAND still dies of its parent-death signal.
func startGuard(w io.Writer) *guard {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		guardWarning(w, err)
		return nil
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		guardWarning(w, err)
		return nil
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "guard"), os.NewFile(uintptr(fds[1]), "guard")
	g := &guard{conn: ours, fd: fds[0], launched: make(chan error, 1), ended: make(chan struct{})}
	go func() {
		defer close(g.ended)
		defer theirs.Close()
		err := launchByShell(theirs)
		if errors.Is(err, fs.ErrNotExist) {
			err = launch(theirs, nil, "/proc/self/exe", guardArg, "launch")
		}
		g.launched <- err
	}()
	pauseAt("launching")
	return g
}

// shellLaunch is the guard's launcher where the system has a shell: it
// starts the guard in the background and exits, which a shell does at a
// fraction of the cost of starting proclock twice. proclock's executable
// is its descriptor 4, opened from /proc/self/exe (right in any pid
// namespace, and even when the file was replaced since), which the
// guard closes.
const shellLaunch = `/proc/self/fd/4 ` + guardArg + ` watch 4 &`

// launchByShell starts the guard through the shell launcher.
func launchByShell(sock *os.File) error {
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer exe.Close()
	return launch(sock, exe, shell, "-c", shellLaunch)
}

// guardEnv is the environment of the launcher and the guard: none of
// the user's, and one processor for the Go runtime (it starts fewer
// threads: the guard waits on one socket and needs no more).
var guardEnv = []string{"GOMAXPROCS=1"}

// launch runs a launcher of the guard that passes it sock as its
// descriptor 3 (and exe, when not nil, as 4), and waits for its end.
func launch(sock, exe *os.File, argv ...string) error {
	launcher := exec.Command(argv[0], argv[1:]...)
	launcher.Env = guardEnv
	launcher.Dir = "/" // the guard keeps no directory of the user busy
	launcher.ExtraFiles = []*os.File{sock}
	if exe != nil {
		launcher.ExtraFiles = append(launcher.ExtraFiles, exe)
	}
	// A session of its own from the start: no signal of proclock's group
	// or terminal ends it before it has started the guard.
	launcher.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return launcher.Run()
}

// armed waits until the guard's launcher has started the guard and
// exited, and returns g, or nil (told on w) when it could not. It must
// return before proclock becomes the subreaper of COMMAND's processes:
// the guard, orphaned by the launcher's exit, then goes to init, not to
// proclock, whose wait for the job's last process would wait for it.
// No readiness of the guard is waited for: whatever proclock sends is
// read by the guard, even should proclock be killed first.
func (g *guard) armed(w io.Writer) *guard {
	if g == nil {
		return nil
	}
	if err := <-g.launched; err != nil {
		g.done.Store(true)
		g.conn.Close()
		guardWarning(w, err)
		return nil
	}
	go g.awaitEnd(w)
	return g
}

// awaitEnd tells on w when the guard ends before proclock dismissed it
// (it was killed): from then on, a killed proclock leaves COMMAND's
// group running, as it did before guards.
func (g *guard) awaitEnd(w io.Writer) {
	buf := make([]byte, 16)
	for {
		if _, err := g.conn.Read(buf); err != nil {
			break
		}
	}
	if !g.done.Load() {
		fmt.Fprintln(w, "proclock: warning: COMMAND's guard ended; should proclock now be killed, COMMAND's processes run on")
	}
}

// guardWarning tells that COMMAND runs unguarded.
func guardWarning(w io.Writer, err error) {
	fprintf(w, "proclock: warning: no guard for COMMAND (a killed proclock leaves COMMAND's processes running): %v\n", err)
}

// watch hands the guard COMMAND's pid and its pidfd (-1 when the kernel
// gave none).
func (g *guard) watch(pid, pidfd int, w io.Writer) {
	if g == nil {
		return
	}
	var rights []byte
	if pidfd >= 0 {
		rights = unix.UnixRights(pidfd)
	}
	if err := unix.Sendmsg(g.fd, []byte("pid "+strconv.Itoa(pid)), rights, nil, 0); err != nil {
		guardWarning(w, err)
	}
}

// dismiss tells the guard the job is over (or never began): it exits
// without killing. It returns once the launcher has ended: forked while
// proclock took the lock, the launcher holds a copy of the lock file's
// descriptor, and with it the kernel's lock, until it executes the shell
// (a failed run otherwise left the lock held for that while after it
// exited, long on a loaded machine).
func (g *guard) dismiss() {
	if g == nil || g.done.Swap(true) {
		return
	}
	_ = unix.Sendmsg(g.fd, []byte("done"), nil, nil, 0)
	g.conn.Close()
	<-g.ended
}

// tiePidfd asks the kernel for a pidfd of cmd when it is created, for
// the guard; it returns where it will be (-1 when the kernel gives none).
func (g *guard) tiePidfd(attr *syscall.SysProcAttr) *int {
	fd := -1
	if g != nil {
		attr.PidFD = &fd
	}
	return &fd
}

// guardMain is proclock as COMMAND's guard: "launch" starts the guard
// detached and exits; "watch" is the guard ("watch 4" when the shell
// launcher started it). Its socket is descriptor 3.
func guardMain(args []string) int {
	if len(args) == 1 && args[0] == "launch" {
		return launchGuard()
	}
	if len(args) == 2 && args[0] == "watch" && args[1] == "4" {
		// Started by the shell launcher: in the launcher's session, and
		// with proclock's executable as its descriptor 4.
		unix.Close(4)
		_, _ = unix.Setsid()
		args = args[:1]
	}
	if len(args) == 1 && args[0] == "watch" {
		guardWatch(3)
		return 0
	}
	return exitUsage
}

// launchGuard starts the guard in a session of its own and exits, so
// that the guard is reparented away from proclock.
func launchGuard() int {
	_, err := os.StartProcess("/proc/self/exe", []string{"proclock", guardArg, "watch"}, &os.ProcAttr{
		Env:   guardEnv,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, os.NewFile(3, "guard")},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return exitUsage
	}
	return exitOK
}

// guardWatch reads proclock's messages on conn until "done" or the end
// that is proclock's death, and then kills COMMAND's group.
func guardWatch(conn int) {
	pid, pidfd := 0, -1
	buf, oob := make([]byte, 64), make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(conn, buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break // proclock is gone
		}
		msg := string(buf[:n])
		if msg == "done" {
			return
		}
		if p, ok := strings.CutPrefix(msg, "pid "); ok {
			pid, _ = strconv.Atoi(p)
			if fds := receivedFDs(oob[:oobn]); len(fds) > 0 {
				pidfd = fds[0]
			}
		}
	}
	if pid > 0 {
		killJobGroup(pid, pidfd)
	}
}

// receivedFDs are the descriptors passed in a message's control data.
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// killJobGroup sends SIGKILL to the process group that COMMAND, pid,
// leads (see the top of this file for why it is never another's).
func killJobGroup(pid, pidfd int) {
	if pidfd < 0 {
		return // no pidfd (linux before 5.3): the id alone proves nothing
	}
	err := unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP)
	if err != unix.EINVAL || reaped(pidfd) {
		return // killed, or no process left in the group (ESRCH)
	}
	_ = unix.Kill(-pid, unix.SIGKILL)
}

// reaped reports whether the process of pidfd has been reaped (its
// fdinfo's Pid is -1): its pid, and so its group's id, may be another's.
func reaped(pidfd int) bool {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	return err != nil || bytes.Contains(b, []byte("Pid:\t-1"))
}
