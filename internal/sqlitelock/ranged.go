package sqlitelock

import (
	"context"
	"errors"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// SQLite's exclusive lock is a write lock on all its lock bytes, which a
// one-page database never reaches (docs/design.md, "Locking without SQL").
const pendingByte, lockBytes = lockrec.SQLitePendingByte, lockrec.SQLiteLockBytes

// byteLocks returns the FS's byte-range locks where the platform's SQLite
// locks files with them: the mechanism then takes SQLite's locks itself.
func byteLocks(p *platform.Platform) (lockfs.RangeLocker, bool) {
	if !p.SQLite.LocksBytes() {
		return nil, false
	}
	rl, ok := p.FS.(lockfs.RangeLocker)
	return rl, ok
}

// lockRange takes SQLite's exclusive lock on pin without waiting; BUSY, as
// SQLite would say, when another holds any part of it.
func (l *Lock) lockRange(pin lockfs.File) error {
	got, err := l.ranged.TryLockRange(pin, pendingByte, lockBytes)
	switch {
	case err != nil:
		return err
	case !got:
		return sqlapi.SQLiteBusy
	}
	l.kept = pin
	return nil
}

// queueRange takes SQLite's exclusive lock on pin, waiting in the
// kernel's queue on a goroutine of its own, since that wait cannot be cut
// short. When ctx ends first it parks the wait: the goroutine closes pin
// once granted, letting go unused, then l.parked.
func (l *Lock) queueRange(ctx context.Context, pin lockfs.File) error {
	if err := l.lockRange(pin); !errors.Is(err, sqlapi.SQLiteBusy) {
		return err
	}
	got, giveUp, done := make(chan error), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		err := l.ranged.LockRange(pin, pendingByte, lockBytes)
		select {
		case got <- err:
		case <-giveUp:
			pin.Close()
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			return err
		}
		l.kept = pin
		return nil
	case <-ctx.Done():
		close(giveUp)
		l.parked = done
		return ctx.Err()
	}
}

// ParkedError is the error of an attempt whose ctx ended while it waited
// in the kernel's queue. It matches Err (ctx's) and Held (the holder
// waited for). Done is closed once the wait is granted and let go of.
type ParkedError struct {
	Err  error
	Held error
	Done <-chan struct{}
}

func (e *ParkedError) Error() string { return e.Err.Error() + " while waiting: " + e.Held.Error() }

func (e *ParkedError) Unwrap() []error { return []error{e.Err, e.Held} }
