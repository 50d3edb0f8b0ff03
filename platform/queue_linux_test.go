package platform_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// A head of another process: the bell opened and locked, as by a
	// waiter that joined first.
	fd, err := unix.Open(filepath.Join(dir, bellName), unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	must(t, err)
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

// A file at the bell's name that is not a FIFO (a user's file, a symlink)
// is neither opened for writing nor changed; the waiter watches as every
// waiter does without a queue.
func TestQueueLeavesOthersFileAlone(t *testing.T) {
	dir := t.TempDir()
	bell := filepath.Join(dir, bellName)
	must(t, os.WriteFile(bell, []byte("notes\n"), 0o600))
	other := filepath.Join(t.TempDir(), "fifo")
	must(t, unix.Mkfifo(other, 0o600))
	link := filepath.Join(dir, "b.lock.bell")
	must(t, os.Symlink(other, link))
	for _, name := range []string{bellName, "b.lock.bell"} {
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
}
