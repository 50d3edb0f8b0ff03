package sqlitelock

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Short retries of a first attempt after its busy timeout.
const (
	retries     = 3
	retryMin    = 5 * time.Millisecond
	retrySpread = 20 * time.Millisecond
)

// afterWake is the wait after a holder was seen letting go: it drops the
// kernel's lock a moment after it removes its mark.
const afterWake = 100 * time.Microsecond

// take takes SQLite's lock on pin, through the byte-range locks or SQL,
// once or as l.a.Retry says.
func (l *Lock) take(ctx context.Context, pin lockfs.File) (err error) {
	p, retry := l.p, l.a.Retry
	defer func() {
		if r := recover(); r != nil {
			err = panicked(r)
		}
		if errors.Is(err, ErrPanic) {
			l.broken = true
		}
	}()
	if retry == RetryQueue && l.ranged != nil {
		return l.queueRange(ctx, pin)
	}
	if retry == RetryNone {
		return l.try(pin, &busyWait{})
	}
	// Every wait goes through the platform's one pause under one kept
	// watch: a holder letting go ends it.
	ctx, stop := wake.Watching(ctx, p)
	defer stop()
	_, kept := p.Wake.(wake.Watcher)
	w := &busyWait{ctx: ctx, p: p, start: p.Time().Now(), path: l.path, names: lockrec.Watched(l.path), kept: kept}
	if l.ranged == nil {
		l.conn.BusyHandler(func(context.Context, int) bool {
			if l.attached && !l.conn.Reserved(schema) {
				return false // no waiting on a mere shared lock (try)
			}
			return w.tick()
		})
		defer l.conn.BusyHandler(nil)
	}
	err = l.try(pin, w)
	for range retries {
		if !errors.Is(err, sqlapi.SQLiteBusy) {
			return err
		}
		d := retryMin + rand.N(retrySpread)
		if w.woke {
			d = afterWake
		}
		if w.pause(d) != nil {
			return err
		}
		err = l.try(pin, w)
	}
	return err
}

// busyWait is a first attempt's busy timeout and retries; its zero value
// never waits.
type busyWait struct {
	ctx   context.Context
	p     *platform.Platform // nil: no waiting
	start time.Time
	path  string
	names []string
	kept  bool // the Waker keeps a watch (wake.Watcher)
	woke  bool // the last pause was ended by a wake-up
	// holder is the pid the waits watch, the mark's; looked again after
	// a wake-up.
	holder int
	looked bool
}

// pause waits d, or until the lock's files change or its holder exits.
func (w *busyWait) pause(d time.Duration) error {
	if !w.looked && w.p.Wake != nil {
		w.holder, w.looked = LivePID(w.p, lockrec.ReadHolder(w.p.FS, w.path).Holder()), true
	}
	woke, err := wake.Pause(w.ctx, w.p, filepath.Dir(w.path), w.names, w.holder, d)
	w.woke = woke
	if woke {
		w.looked = false // gone, or changing hands: look again
	}
	return err
}

// tick is one wait of the busy timeout; false once it is out.
func (w *busyWait) tick() bool {
	if w.p == nil || w.p.Time().Now().Sub(w.start) >= BusyTimeout {
		return false
	}
	d := time.Millisecond
	if w.woke && w.kept {
		d = afterWake
	}
	return w.pause(d) == nil
}

// try takes SQLite's exclusive lock, trying again at each of w's ticks
// while it is busy. Through SQL it lets go of the attach's shared lock
// before each tick, so that its waits stall nobody.
func (l *Lock) try(pin lockfs.File, w *busyWait) error {
	for {
		err := l.tryOnce(pin)
		if !errors.Is(err, sqlapi.SQLiteBusy) {
			return err
		}
		if l.attached {
			if derr := exec(l.conn, "DETACH "+schema); derr != nil {
				return derr
			}
			l.attached = false
		}
		if !w.tick() {
			return err
		}
	}
}

// tryOnce makes one try at SQLite's exclusive lock.
func (l *Lock) tryOnce(pin lockfs.File) error {
	if l.ranged != nil {
		return l.lockRange(pin)
	}
	if !l.attached {
		if err := exec(l.conn, attachSQL(l.name, false)); err != nil {
			return err
		}
		l.attached = true
	}
	return exec(l.conn, lockSQL)
}
