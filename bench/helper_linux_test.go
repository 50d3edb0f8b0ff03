package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// roleEnv, when set, makes the test binary a helper process of the
// benchmarks instead of running them: a holder, a waiter, a contender.
// Its arguments follow on the command line; it talks over stdin and
// stdout, one line a message.
const roleEnv = "PROCLOCK_BENCH_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := serve(role, os.Args[1:]); err != nil {
			fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
			os.Exit(2)
		}
		os.Exit(0)
	}
	code := m.Run()
	removeBuilt()
	os.Exit(code)
}

// serve plays a helper role; see each case.
func serve(role string, args []string) error {
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	need := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("role %s wants %d arguments, has %q", role, n, args)
		}
		return nil
	}
	switch role {
	case "hold": // kind path; "take" takes without waiting, "release" lets go
		if err := need(2); err != nil {
			return err
		}
		var release func() error
		for in.Scan() {
			switch in.Text() {
			case "take":
				r, err := take(ctx, args[0], args[1], false)
				if err != nil {
					return err
				}
				release = r
				fmt.Println("held")
			case "release":
				at := mono()
				if err := release(); err != nil {
					return err
				}
				fmt.Println("released", at)
			}
		}
		return in.Err()
	case "contend": // kind path counter n: n critical sections after "go"
		if err := need(4); err != nil {
			return err
		}
		n, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		fmt.Println("ready")
		if !in.Scan() {
			return errors.New("no go")
		}
		for range n {
			if err := criticalSection(ctx, args[0], args[1], args[2]); err != nil {
				return err
			}
		}
		fmt.Println("done")
		return nil
	case "waitcpu": // kind path duration: CPU used while waiting that long
		if err := need(3); err != nil {
			return err
		}
		d, err := time.ParseDuration(args[2])
		if err != nil {
			return err
		}
		cpu0, wall0 := cpuNanos(), mono()
		got := make(chan error, 1)
		go func() {
			_, err := take(ctx, args[0], args[1], true)
			got <- err
		}()
		select {
		case err := <-got:
			return fmt.Errorf("took a lock that should stay held: %v", err)
		case <-time.After(d): // the measurement itself: nothing is awaited
		}
		fmt.Println("cpu", cpuNanos()-cpu0, mono()-wall0)
		return nil // exits while the wait goes on
	case "herd": // kind path hold: after "go", wait; after "mark", count CPU
		if err := need(3); err != nil {
			return err
		}
		hold, err := time.ParseDuration(args[2])
		if err != nil {
			return err
		}
		fmt.Println("ready")
		if !in.Scan() {
			return errors.New("no go")
		}
		marked := make(chan int64, 1)
		go func() {
			if in.Scan() { // "mark": the first release is about to come
				marked <- cpuNanos()
				fmt.Println("marked")
			}
		}()
		release, err := take(ctx, args[0], args[1], true)
		if err != nil {
			return err
		}
		burnt, at := cpuNanos()-<-marked, mono()
		time.Sleep(hold) // the holder's work
		if err := release(); err != nil {
			return err
		}
		fmt.Println("done", burnt, at)
		return nil
	case "rss": // kind dir n: resident memory of n locks held at once
		if err := need(3); err != nil {
			return err
		}
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		return holdMany(ctx, args[0], args[1], n)
	case "once": // kind op path n: n acquisitions or probes between markers
		if err := need(4); err != nil {
			return err
		}
		n, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		return once(ctx, args[0], args[1], args[2], n)
	}
	return fmt.Errorf("no role %q", role)
}

// criticalSection takes the lock, adds one to the counter file, lets go:
// a lost update shows two holders at once.
func criticalSection(ctx context.Context, kind, path, counter string) error {
	release, err := take(ctx, kind, path, true)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(counter)
	if err != nil {
		release()
		return err
	}
	n := 0
	if len(data) > 0 {
		if n, err = strconv.Atoi(string(data)); err != nil {
			release()
			return err
		}
	}
	if err := os.WriteFile(counter, strconv.AppendInt(nil, int64(n+1), 10), 0o644); err != nil {
		release()
		return err
	}
	return release()
}

// holdMany prints the resident memory and Go heap that n held locks take,
// past one taken and released first (SQLite's module, the first open),
// with the descriptors and goroutines they keep, and the time of one
// Acquire+Release of another lock (the median of acquisitions rounds)
// before the n are taken and while they are held.
func holdMany(ctx context.Context, kind, dir string, n int) error {
	// proclock keeps two descriptors a held lock (its file and its
	// directory's): 10,000 locks pass a limit of 20,000, which root may
	// raise.
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(3*n+100) {
		want := max(lim.Max, uint64(3*n+100))
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: want})
	}
	warm, err := take(ctx, kind, filepath.Join(dir, "warm"), false)
	if err != nil {
		return err
	}
	warm()
	before, err := acquireTime(ctx, kind, filepath.Join(dir, "probe-before"))
	if err != nil {
		return err
	}
	runtime.GC()
	rss0, err := vmRSS()
	if err != nil {
		return err
	}
	fds0, g0 := openFds(), runtime.NumGoroutine()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	releases := make([]func() error, n)
	for i := range releases {
		if releases[i], err = take(ctx, kind, filepath.Join(dir, fmt.Sprintf("lock-%d", i)), false); err != nil {
			return err
		}
	}
	runtime.GC()
	rss1, err := vmRSS()
	if err != nil {
		return err
	}
	runtime.ReadMemStats(&ms1)
	fds1, g1 := openFds(), runtime.NumGoroutine()
	during, err := acquireTime(ctx, kind, filepath.Join(dir, "probe-during"))
	if err != nil {
		return err
	}
	fmt.Println("rss", rss1-rss0, int64(ms1.HeapInuse)-int64(ms0.HeapInuse), fds1-fds0, g1-g0, before, during)
	for _, r := range releases {
		if err := r(); err != nil {
			return err
		}
	}
	return nil
}

// acquisitions is how many Acquire+Release acquireTime times.
const acquisitions = 200

// acquireTime is the median time, in nanoseconds, of one Acquire+Release
// of the lock at path.
func acquireTime(ctx context.Context, kind, path string) (int64, error) {
	times := make([]int64, acquisitions)
	for i := range times {
		start := time.Now()
		release, err := take(ctx, kind, path, false)
		if err != nil {
			return 0, err
		}
		if err := release(); err != nil {
			return 0, err
		}
		times[i] = int64(time.Since(start))
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// openFds is how many descriptors this process has open.
func openFds() int64 {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return int64(len(entries))
}

// once warms up with three operations, then does n between two marker
// system calls (a stat of a path that does not exist), for
// bench/syscalls.sh to count the system calls in between.
func once(ctx context.Context, kind, op, path string, n int) error {
	do := func() error {
		switch op {
		case "acquire":
			release, err := take(ctx, kind, path, false)
			if err != nil {
				return err
			}
			return release()
		case "isheld":
			_, err := probe(ctx, kind, path)
			return err
		}
		return fmt.Errorf("no op %q", op)
	}
	for range 3 {
		if err := do(); err != nil {
			return err
		}
	}
	os.Stat("/proclock-bench-begin")
	for range n {
		if err := do(); err != nil {
			return err
		}
	}
	os.Stat("/proclock-bench-end")
	return nil
}

// helper is a helper process: the test binary again, in a role.
type helper struct {
	tb   testing.TB
	cmd  *exec.Cmd
	in   *os.File
	out  *bufio.Scanner
	done chan struct{} // closed when the process is reaped
}

// startHelper starts the test binary in role; it is killed at the end of
// the benchmark if still running.
func startHelper(tb testing.TB, role string, args ...string) *helper {
	tb.Helper()
	// Our own pipes, not exec's: a pipe exec made is closed when the
	// process is reaped, with what it last wrote maybe unread.
	inR, inW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	inR.Close()
	outW.Close()
	h := &helper{tb: tb, cmd: cmd, in: inW, out: bufio.NewScanner(outR), done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(h.done)
	}()
	tb.Cleanup(func() {
		h.kill()
		<-h.done
		inW.Close()
		outR.Close()
	})
	return h
}

// holding starts a helper that holds the lock at path until the end of
// the benchmark, or until told to release it.
func holding(tb testing.TB, kind, path string) *helper {
	tb.Helper()
	h := startHelper(tb, "hold", kind, path)
	h.say("take")
	h.expect("held")
	return h
}

// say sends the helper one line.
func (h *helper) say(line string) {
	if _, err := fmt.Fprintln(h.in, line); err != nil {
		h.tb.Fatalf("to %s: %v", h.cmd.Args, err)
	}
}

// expect reads the helper's next line, which must start with word, and
// returns the numbers after it.
func (h *helper) expect(word string) []int64 {
	if !h.out.Scan() {
		h.tb.Fatalf("helper %s ended before saying %q: %v", h.cmd.Args, word, h.out.Err())
	}
	fields := strings.Fields(h.out.Text())
	if len(fields) == 0 || fields[0] != word {
		h.tb.Fatalf("helper %s said %q, want %q", h.cmd.Args, h.out.Text(), word)
	}
	nums := make([]int64, len(fields)-1)
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			h.tb.Fatalf("helper %s said %q: %v", h.cmd.Args, h.out.Text(), err)
		}
		nums[i] = n
	}
	return nums
}

// kill sends SIGKILL; the process is reaped in the background (a zombie
// holds nothing, and proclock's judge knows one for dead).
func (h *helper) kill() {
	select {
	case <-h.done:
	default:
		h.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// exited waits for the helper to end by itself and returns its state.
func (h *helper) exited() *os.ProcessState {
	<-h.done
	if !h.cmd.ProcessState.Success() {
		h.tb.Fatalf("helper %s: %v", h.cmd.Args, h.cmd.ProcessState)
	}
	return h.cmd.ProcessState
}
