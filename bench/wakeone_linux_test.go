package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock/platform"
)

// wakeRounds is how many releases BenchmarkWakeOne makes, herdHold apart.
const wakeRounds = 50

// BenchmarkWakeOne: the wake-up alone, without the lock's protocol: N
// sleeping processes (1, 4, 16), and a release every 20 ms, 50 times.
// Each sleeper counts the CPU it burns and how often it woke. Two ways to
// sleep:
//   - inotify: the platform's kept watch of the lock's names, on a live
//     holder's pidfd, as a proclock waiter sleeps today; a release removes
//     the mark (app.lock.holder). Every sleeper wakes, and sleeps again
//     without looking at anything: the least a loser can cost.
//   - bell: a FIFO beside the lock (app.lock.bell), held open read-write
//     by each sleeper and polled with EPOLLEXCLUSIVE; a release writes one
//     byte into it. The kernel wakes one sleeper (docs/protocol.md, "One
//     waiter woken per release").
//
// Reports cpu-µs/release (all sleepers' CPU over the releases), woken/release
// and %cpu-herd (that CPU over the 20 ms between releases, in percent of a
// core).
func BenchmarkWakeOne(b *testing.B) {
	for _, how := range []string{"inotify", "bell"} {
		for _, n := range herdSizes() {
			b.Run(fmt.Sprintf("%s/sleepers=%d", how, n), func(b *testing.B) {
				dir := b.TempDir()
				sleepers := make([]*helper, n)
				for i := range sleepers {
					sleepers[i] = startHelper(b, "sleep", how, dir)
				}
				for _, h := range sleepers {
					h.expect("ready")
				}
				var cpu, woke int64
				oneRound(b, func() {
					for _, h := range sleepers {
						h.say("mark")
					}
					for _, h := range sleepers {
						h.expect("marked")
					}
					for range wakeRounds {
						time.Sleep(herdHold) // the holder's work
						if err := ring(how, dir); err != nil {
							b.Fatal(err)
						}
					}
					time.Sleep(herdHold) // the last release's wake-ups
					for _, h := range sleepers {
						h.say("stop")
					}
					for _, h := range sleepers {
						got := h.expect("slept")
						cpu += got[0]
						woke += got[1]
					}
				})
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(cpu)/wakeRounds/1e3, "cpu-µs/release")
				b.ReportMetric(float64(woke)/wakeRounds, "woken/release")
				b.ReportMetric(100*float64(cpu)/float64(wakeRounds*herdHold), "%cpu-herd")
			})
		}
	}
}

// ring makes one release of how's kind in dir.
func ring(how, dir string) error {
	switch how {
	case "inotify":
		mark := filepath.Join(dir, "app.lock.holder")
		if err := os.WriteFile(mark, []byte("{}\n"), 0o644); err != nil {
			return err
		}
		return os.Remove(mark)
	case "bell":
		fd, err := unix.Open(filepath.Join(dir, "app.lock.bell"), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("bell: %w", err)
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte{1})
		return err
	}
	return fmt.Errorf("no way to ring %q", how)
}

// sleepRole is the "sleep" helper: how dir. It sleeps as how says, over
// and over, until "stop"; from "mark" on it counts its CPU and wake-ups,
// and says "slept CPU WAKES".
func sleepRole(ctx context.Context, how, dir string, lines func() (string, bool)) error {
	var woke atomic.Int64
	var sleep func() (bool, error)
	switch how {
	case "inotify":
		p := platform.Native()
		watcher, ok := p.Wake.(platform.Watcher)
		if !ok {
			return errors.New("the native waker keeps no watch")
		}
		w, err := watcher.Watch(dir, []string{"app.lock", "app.lock.holder"})
		if err != nil {
			return err
		}
		defer w.Close()
		holder := os.Getppid() // a live process, watched as a holder is
		sleep = func() (bool, error) {
			why, err := w.Wait(ctx, holder, time.Second)
			return why == platform.WakeChange, err
		}
	case "bell":
		name := filepath.Join(dir, "app.lock.bell")
		if err := unix.Mkfifo(name, 0o644); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("mkfifo: %w", err)
		}
		// Read-write: the writers never drop to none, which would wake
		// every sleeper (a FIFO's hang-up).
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return err
		}
		defer unix.Close(ep)
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(fd)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return fmt.Errorf("EPOLLEXCLUSIVE: %w", err)
		}
		sleep = func() (bool, error) {
			var evs [1]unix.EpollEvent
			n, err := unix.EpollWait(ep, evs[:], 1000)
			if err == unix.EINTR || n == 0 {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			var one [1]byte
			got, err := unix.Read(fd, one[:])
			return got == 1, nil // EAGAIN: another took the byte
		}
	default:
		return fmt.Errorf("no way to sleep %q", how)
	}
	done := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			rang, err := sleep()
			if err != nil {
				done <- err
				return
			}
			if rang {
				woke.Add(1)
			}
		}
	}()
	fmt.Println("ready")
	var cpu0, woke0 int64
	for {
		line, ok := lines()
		if !ok {
			return errors.New("no stop")
		}
		switch line {
		case "mark":
			cpu0, woke0 = cpuNanos(), woke.Load()
			fmt.Println("marked")
		case "stop":
			cpu, n := cpuNanos()-cpu0, woke.Load()-woke0
			close(stop)
			fmt.Println("slept", cpu, n)
			return nil // exits while the sleep goes on
		}
	}
}
