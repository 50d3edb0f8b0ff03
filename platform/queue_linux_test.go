package platform_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

const bellName = "app.lock.bell"

var queueNames = []string{"app.lock", "app.lock.holder"}

// queue joins the native waker's queue of a lock in dir.
func queue(t *testing.T, dir string) platform.Watch {
	t.Helper()
	q, ok := platform.Native().Wake.(platform.Queuer)
	if !ok {
		t.Fatal("the linux waker has no queue")
	}
	w, err := q.Queue(dir, queueNames, bellName)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// waitOn starts w.Wait in a goroutine.
func waitOn(ctx context.Context, w platform.Watch, d time.Duration) <-chan waitResult {
	res := make(chan waitResult, 1)
	go func() {
		why, err := w.Wait(ctx, 0, d)
		res <- waitResult{why, err}
	}()
	return res
}

// The first waiter leads at once; the ones behind it sleep until it
// leaves, and then one of them leads, and when that one leaves, the
// next. Without the head's ring each would sleep out its 20 s.
func TestQueueNextLeads(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	head := queue(t, dir)
	if why, err := head.Wait(ctx, 0, wakeLong); why != platform.WakeChange || err != nil {
		t.Fatalf("the first waiter's Wait = %v, %v; want change (it leads)", why, err)
	}
	st, err := os.Lstat(filepath.Join(dir, bellName))
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the bell: %v, %v; want a FIFO", st, err)
	}
	behind := []platform.Watch{queue(t, dir), queue(t, dir)}
	res := []<-chan waitResult{waitOn(ctx, behind[0], wakeLong), waitOn(ctx, behind[1], wakeLong)}
	next := func(leaving platform.Watch, want int) int {
		t.Helper()
		leaving.Close()
		select {
		case r := <-res[0]:
			if r.why != platform.WakeChange || r.err != nil {
				t.Fatalf("a waiter behind: %v, %v; want change", r.why, r.err)
			}
			return 0
		case r := <-res[1]:
			if r.why != platform.WakeChange || r.err != nil {
				t.Fatalf("a waiter behind: %v, %v; want change", r.why, r.err)
			}
			return 1
		case <-time.After(wakeLong / 2):
			t.Fatalf("the head left; %d waiters behind it still sleep", want)
		}
		return -1
	}
	i := next(head, 2)
	last := next(behind[i], 1)
	if last == i {
		t.Fatalf("waiter %d led twice", i)
	}
	behind[last].Close()
}

// The head is woken by a watched name going away, as the kept watch of
// every waiter was before the queue.
func TestQueueHeadWatchesNames(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "app.lock.holder")
	writeFile(t, mark)
	head := queue(t, dir)
	defer head.Close()
	if why, _ := head.Wait(t.Context(), 0, wakeLong); why != platform.WakeChange {
		t.Fatalf("the first waiter's Wait = %v; want change (it leads)", why)
	}
	res := waitOn(t.Context(), head, wakeLong)
	must(t, os.Remove(mark))
	if r := <-res; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("the head's Wait after the mark went = %v, %v; want change", r.why, r.err)
	}
}

// queueHeadRole joins the queue of a lock in the directory args[0],
// leads it (nobody else waits yet), says "head", and waits until its
// stdin closes or it is killed.
var queueHeadRole = locktest.NewRole("queue-head", func(args []string) int {
	w, err := platform.Native().Wake.(platform.Queuer).Queue(args[0], queueNames, bellName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if why, err := w.Wait(context.Background(), 0, time.Minute); why != platform.WakeChange || err != nil {
		fmt.Fprintln(os.Stderr, "did not lead:", why, err)
		return 2
	}
	fmt.Println("head")
	io.Copy(io.Discard, os.Stdin)
	return 0
})

// The queue's head, another process, is SIGKILLed while two waiters sleep
// behind it, each wait bounded at an hour: the head's death wakes them
// (each polls a pidfd of the bell's flock(2) holder), one of them leads at
// once, and when it leaves, the other leads. A dead head rings nothing:
// before, the next head was found only when a wait behind reached its
// bound, so here the waits would end by the test's context instead.
func TestQueueHeadKilledNextLeads(t *testing.T) {
	dir := t.TempDir()
	head := locktest.Start(t, queueHeadRole.Command(dir))
	if line, err := head.Line(); err != nil || line != "head" {
		t.Fatalf("head process: %q, %v", line, err)
	}
	armed := make(chan struct{}, 2)
	q := platform.NewTestWaker(func() { armed <- struct{}{} }).(platform.Queuer)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var behind [2]platform.Watch
	var res [2]<-chan waitResult
	for i := range behind {
		w, err := q.Queue(dir, queueNames, bellName)
		must(t, err)
		defer w.Close()
		behind[i] = w
		res[i] = waitOn(ctx, w, time.Hour)
	}
	// Both watch everything (the head included) and are about to sleep.
	<-armed
	<-armed
	head.Kill()
	var r waitResult
	first := 0
	select {
	case r = <-res[0]:
	case r = <-res[1]:
		first = 1
	}
	if r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("behind a killed head, the first Wait to end = %v, %v; want change (it leads, woken by the death)", r.why, r.err)
	}
	behind[first].Close()
	if r := <-res[1-first]; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("behind the new head, after it left: %v, %v; want change (it leads)", r.why, r.err)
	}
}

// A head this waiter cannot watch (here one of its own process: its
// pidfd would never tell) rings nothing when it dies; the kernel lets go
// of its flock(2) lock, and the waiter behind leads when its wait reaches
// its bound.
func TestQueueDeadHeadCostsOneBound(t *testing.T) {
	dir := t.TempDir()
	w := queue(t, dir)
	defer w.Close()
	// A head of another process: the bell opened and locked (the head's
	// OFD lock, and the flock(2) lock that names it), as by a waiter that
	// joined first.
	fd, err := unix.Open(filepath.Join(dir, bellName), unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	must(t, err)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Len: 1}
	must(t, unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk))
	must(t, unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB))
	const bound = 50 * time.Millisecond
	if why, err := w.Wait(t.Context(), 0, bound); why != platform.WakeTimeout || err != nil {
		t.Fatalf("behind a live head, a wait of %v = %v, %v; want timeout", bound, why, err)
	}
	must(t, unix.Close(fd)) // its death: the descriptor closed, no ring
	if why, err := w.Wait(t.Context(), 0, wakeLong); why != platform.WakeChange || err != nil {
		t.Fatalf("with the head dead, Wait = %v, %v; want change (it leads)", why, err)
	}
}

// A file at the bell's name that is not a FIFO (a user's file, a symlink,
// a directory) is neither opened for writing nor changed; the waiter watches as every
// waiter does without a queue.
func TestQueueLeavesOthersFileAlone(t *testing.T) {
	dir := t.TempDir()
	bell := filepath.Join(dir, bellName)
	must(t, os.WriteFile(bell, []byte("notes\n"), 0o600))
	other := filepath.Join(t.TempDir(), "fifo")
	must(t, unix.Mkfifo(other, 0o600))
	link := filepath.Join(dir, "b.lock.bell")
	must(t, os.Symlink(other, link))
	sub := filepath.Join(dir, "c.lock.bell")
	must(t, os.Mkdir(sub, 0o700))
	writeFile(t, filepath.Join(sub, "notes"))
	for _, name := range []string{bellName, "b.lock.bell", "c.lock.bell"} {
		q := platform.Native().Wake.(platform.Queuer)
		w, err := q.Queue(dir, queueNames, name)
		must(t, err)
		// The plain kept watch: a name going away wakes it, and it
		// does not lead (its first Wait ends by its time).
		if why, err := w.Wait(t.Context(), 0, 10*time.Millisecond); why != platform.WakeTimeout || err != nil {
			t.Errorf("%s: Wait = %v, %v; want timeout (no queue)", name, why, err)
		}
		w.Close()
	}
	if got, err := os.ReadFile(bell); err != nil || string(got) != "notes\n" {
		t.Errorf("the user's file at the bell's name: %q, %v", got, err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink at the bell's name: %v, %v", st, err)
	}
	if ents, err := os.ReadDir(sub); err != nil || len(ents) != 1 {
		t.Errorf("the directory at the bell's name: %v, %v", ents, err)
	}
}

// A tmp cleaner removes the bell while a head (another process) leads its
// queue and a waiter sleeps behind it; a later waiter makes a new bell at
// the name and leads that one: two queues. The waiter behind the first
// head watches the head of the bell it holds open, not of the one at the
// name now, so that the first head's death wakes it and it leads its
// queue at once. (It looked the head up by the bell's name: from its next
// wait on it watched the second queue's head, and slept behind the dead
// one until its wait's bound, here an hour: the test's context ended it.)
func TestQueueBellRemovedWatchesItsOwnHead(t *testing.T) {
	dir := t.TempDir()
	first := locktest.Start(t, queueHeadRole.Command(dir))
	if line, err := first.Line(); err != nil || line != "head" {
		t.Fatalf("first head process: %q, %v", line, err)
	}
	armed := make(chan struct{}, 2)
	q := platform.NewTestWaker(func() { armed <- struct{}{} }).(platform.Queuer)
	w, err := q.Queue(dir, queueNames, bellName)
	must(t, err)
	defer w.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if why, err := w.Wait(ctx, 0, 10*time.Millisecond); why != platform.WakeTimeout || err != nil {
		t.Fatalf("behind the first head, a short wait = %v, %v; want timeout", why, err)
	}
	<-armed
	must(t, os.Remove(filepath.Join(dir, bellName)))
	second := locktest.Start(t, queueHeadRole.Command(dir))
	if line, err := second.Line(); err != nil || line != "head" {
		t.Fatalf("second head process (of a new bell): %q, %v", line, err)
	}
	res := waitOn(ctx, w, time.Hour)
	<-armed
	first.Kill()
	if r := <-res; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("behind the first head, killed, with another queue's bell at the name: %v, %v; want change (it leads its own queue)", r.why, r.err)
	}
}

// A neighbour that is no waiter takes the bell's flock(2) lock and keeps
// it (flock(1) on P.bell, the real one). A waiter still leads, since the
// head's lock is an OFD lock, which a flock(2) lock does not keep out; so
// it watches the lock's names, and a release wakes it. (When the head's
// lock was the flock(2) lock, no waiter could lead beside such a
// neighbour: a release woke nobody, and every waiter found it at the
// bound of its wait, up to a second in Acquire, at every handoff; here
// the test's context ended the first wait.)
func TestQueueNeighbourFlocksBell(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) here:", err)
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "app.lock.holder")
	writeFile(t, mark)
	// Queued first, so that the bell is there and open for writing:
	// flock(1) opens it for reading, which waits for a writer.
	w := queue(t, dir)
	defer w.Close()
	n := locktest.Start(t, exec.Command(flock, filepath.Join(dir, bellName), "sh", "-c", "echo locked; exec cat"))
	if line, err := n.Line(); err != nil || line != "locked" {
		t.Fatalf("flock(1): %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if why, err := w.Wait(ctx, 0, time.Hour); why != platform.WakeChange || err != nil {
		t.Fatalf("beside flock(1) on the bell, the first waiter's Wait = %v, %v; want change (it leads)", why, err)
	}
	res := waitOn(ctx, w, time.Hour)
	must(t, os.Remove(mark))
	if r := <-res; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("the head's Wait after the mark went, beside flock(1) on the bell = %v, %v; want change", r.why, r.err)
	}
}

// queueWaiterRole joins the queue of a lock in the directory args[0] and
// waits behind its head: it says "asleep" each time a Wait of its watches
// everything and is about to sleep, and "head" once it leads; it then
// waits until its stdin closes or it is killed.
var queueWaiterRole = locktest.NewRole("queue-waiter", func(args []string) int {
	q := platform.NewTestWaker(func() { fmt.Println("asleep") }).(platform.Queuer)
	w, err := q.Queue(args[0], queueNames, bellName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for {
		why, err := w.Wait(context.Background(), 0, time.Hour)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if why == platform.WakeChange {
			break
		}
	}
	fmt.Println("head")
	io.Copy(io.Discard, os.Stdin)
	return 0
})

// The queue's head, its deputy and a third waiter, three processes of one
// process group, are SIGKILLed together (kill -9 -pgid: a service stopped,
// a shell job killed) while a fourth waiter sleeps behind them that
// watches none of them (it queued under an earlier head, here one of its
// own process, which it does not watch). Nobody is left to see the
// deaths: the fourth sleeps out its wait's bound (up to a second in
// Acquire; here an hour, so the test's context ends it). With two in the
// group it leads at once: as the new head reads the first of the leaving
// head's two rings, the pipe wakes its next reader (a read that leaves a
// byte does), which is the fourth, and it watches the new head; a third
// in the group takes that wake-up. Several crashes at once, which
// docs/queue.pml does not model; not fixed (review2's report): run with
// PROCLOCK_QUEUE_FINDINGS=1 to see it fail.
func TestQueueGroupKilledTogether(t *testing.T) {
	if os.Getenv("PROCLOCK_QUEUE_FINDINGS") == "" {
		t.Skip("a known gap, not fixed: the head, its deputy and the one the pipe wakes killed at once leave the waiters behind to their bound (PROCLOCK_QUEUE_FINDINGS=1 runs it)")
	}
	dir := t.TempDir()
	bell := filepath.Join(dir, bellName)
	must(t, unix.Mkfifo(bell, 0o660))
	// The earlier head: the bell opened and locked, as by a waiter of this
	// process that joined first.
	fd, err := unix.Open(bell, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Len: 1}
	must(t, unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk))
	must(t, unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB))
	var group []*locktest.Child
	for i := range 3 {
		cmd := queueWaiterRole.Command(dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if i > 0 {
			cmd.SysProcAttr.Pgid = group[0].Pid()
		}
		c := locktest.Start(t, cmd)
		if line, err := c.Line(); err != nil || line != "asleep" {
			t.Fatalf("waiter %d: %q, %v", i, line, err)
		}
		group = append(group, c)
	}
	armed := make(chan struct{}, 1)
	q := platform.NewTestWaker(func() { armed <- struct{}{} }).(platform.Queuer)
	w, err := q.Queue(dir, queueNames, bellName)
	must(t, err)
	defer w.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res := waitOn(ctx, w, time.Hour)
	<-armed
	// The earlier head leaves as a head does: its locks let go of, then
	// two rings. A waiter leads; another, its deputy, watches it; both
	// rings are read.
	must(t, unix.Flock(fd, unix.LOCK_UN))
	lk.Type = unix.F_UNLCK
	must(t, unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk))
	for range 2 {
		if _, err := unix.Write(fd, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	// One of the group leads (which one is the kernel's walk's).
	led := make(chan string, len(group))
	for _, c := range group {
		go func() {
			line, err := c.Line()
			if err != nil {
				line = err.Error()
			}
			led <- line
		}()
	}
	select {
	case line := <-led:
		if line != "head" {
			t.Fatalf("a waiter of the group: %q; want head", line)
		}
	case r := <-res:
		t.Skipf("the fourth waiter led (%v, %v): the setting this test is about was not reached", r.why, r.err)
	case <-ctx.Done():
		t.Fatal("nobody led after the earlier head left")
	}
	for {
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
		must(t, err)
		if n == 0 {
			break
		}
		runtime.Gosched()
	}
	select {
	case r := <-res:
		t.Skipf("the fourth waiter's Wait ended before the kill (%v, %v): the setting this test is about was not reached", r.why, r.err)
	default:
	}
	must(t, unix.Kill(-group[0].Pid(), unix.SIGKILL))
	for _, c := range group {
		c.Wait()
	}
	if r := <-res; r.why != platform.WakeChange || r.err != nil {
		t.Fatalf("behind a head, its deputy and a third waiter killed together: %v, %v; want change (it leads)", r.why, r.err)
	}
}
