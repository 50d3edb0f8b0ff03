package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/nightlyone/lockfile"
	"github.com/rogpeppe/go-internal/lockedfile"
	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// The locks measured, by the name the benchmarks and helper processes
// give them.
const (
	kindSQLite     = "proclock-sqlite"
	kindFile       = "proclock-file"
	kindFlock      = "flock"      // flock(2) on a file that stays
	kindOFD        = "ofd"        // an open file description lock (F_OFD_SETLK)
	kindExcl       = "excl"       // O_EXCL create + write, unlink to release
	kindGofrs      = "gofrs"      // github.com/gofrs/flock
	kindLockedfile = "lockedfile" // github.com/rogpeppe/go-internal/lockedfile
	kindNightlyone = "nightlyone" // github.com/nightlyone/lockfile
)

// proclockKinds are the two mechanisms of proclock; flockKinds adds the
// kernel's blocking flock(2) as the floor of waiting.
var (
	proclockKinds = []string{kindSQLite, kindFile}
	waitKinds     = []string{kindSQLite, kindFile, kindFlock}
)

// nativePlatform is the native platform, locking with the mechanism kind
// names.
func nativePlatform(kind string) *platform.Platform {
	p := platform.Native()
	if kind == kindFile {
		p = p.WithoutSQLite()
	}
	return p
}

// errBusy: a lock taken without waiting was held.
var errBusy = errors.New("bench: lock is held")

// take takes the lock of the given kind at path, waiting for it when wait
// is set (proclock and flock only), and returns what lets go of it.
func take(ctx context.Context, kind, path string, wait bool) (release func() error, err error) {
	switch kind {
	case kindSQLite, kindFile:
		l, err := proclock.Acquire(ctx, nativePlatform(kind), path, proclock.Options{Wait: wait})
		if errors.Is(err, proclock.ErrHeld) {
			return nil, errBusy
		}
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	case kindFlock:
		// System calls alone, no *os.File: the kernel's floor.
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		how := unix.LOCK_EX
		if !wait {
			how |= unix.LOCK_NB
		}
		if err := unix.Flock(fd, how); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, errBusy
			}
			return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
		}
		return func() error { return unix.Close(fd) }, nil // the last close lets go
	case kindOFD:
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK}
		if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
				return nil, errBusy
			}
			return nil, &fs.PathError{Op: "F_OFD_SETLK", Path: path, Err: err}
		}
		return func() error { return unix.Close(fd) }, nil
	case kindExcl:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return nil, errBusy
		}
		if err != nil {
			return nil, err
		}
		_, werr := f.Write(exclStamp())
		if err := errors.Join(werr, f.Close()); err != nil {
			os.Remove(path)
			return nil, err
		}
		return func() error { return os.Remove(path) }, nil
	case kindGofrs:
		fl := flock.New(path)
		ok, err := fl.TryLock()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errBusy
		}
		return fl.Unlock, nil
	case kindLockedfile:
		unlock, err := lockedfile.MutexAt(path).Lock() // blocks: it has no try
		if err != nil {
			return nil, err
		}
		return func() error { unlock(); return nil }, nil
	case kindNightlyone:
		lf, err := lockfile.New(path)
		if err != nil {
			return nil, err
		}
		if err := lf.TryLock(); errors.Is(err, lockfile.ErrBusy) {
			return nil, errBusy
		} else if err != nil {
			return nil, err
		}
		return lf.Unlock, nil
	}
	return nil, fmt.Errorf("bench: no lock kind %q", kind)
}

// probe tells whether the lock of the given kind at path is held, the
// cheapest way each lock offers without keeping it. The raw paths and
// gofrs/flock can only try to take it and let go at once; go-internal's
// lockedfile has no probe at all.
func probe(ctx context.Context, kind, path string) (bool, error) {
	switch kind {
	case kindSQLite, kindFile:
		return proclock.IsHeld(ctx, nativePlatform(kind), path)
	case kindFlock, kindGofrs:
		release, err := take(ctx, kind, path, false)
		if errors.Is(err, errBusy) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, release()
	case kindOFD:
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		defer unix.Close(fd)
		lk := unix.Flock_t{Type: unix.F_WRLCK}
		if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk); err != nil {
			return false, &fs.PathError{Op: "F_OFD_GETLK", Path: path, Err: err}
		}
		return lk.Type != unix.F_UNLCK, nil
	case kindExcl:
		// A stamp that exists is held: the bare lock file knows no more.
		_, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	case kindNightlyone:
		lf, err := lockfile.New(path)
		if err != nil {
			return false, err
		}
		_, err = lf.GetOwner() // reads the pid and signals it with 0
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, lockfile.ErrDeadOwner) {
			return false, nil
		}
		return err == nil, err
	}
	return false, fmt.Errorf("bench: no probe for %q", kind)
}

// exclStamp is what a bare O_EXCL lock file holds: who wrote it, in
// about as many bytes as a proclock stamp.
func exclStamp() []byte {
	host, _ := os.Hostname()
	return fmt.Appendf(nil, `{"host":%q,"pid":%d,"startTime":%d,"acquiredAt":%q,"nonce":"ABCDEFGHIJKLMNOPQRSTUVWXYZ"}`+"\n",
		host, os.Getpid(), 123456, time.Now().UTC().Format(time.RFC3339Nano))
}

// mono is the system-wide monotonic clock in nanoseconds, the same in
// every process: how a helper process's moment is compared with ours.
func mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC exists on every linux Go runs on
	}
	return ts.Nano()
}

// cpuNanos is the user and system time this process has used.
func cpuNanos() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// vmRSS is this process's resident set in bytes, from /proc/self/status.
func vmRSS() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kib int64
			var unit string
			if _, err := fmt.Sscan(rest, &kib, &unit); err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kib * 1024, nil
		}
	}
	return 0, errors.New("bench: no VmRSS in /proc/self/status")
}
