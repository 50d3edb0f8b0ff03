package fake

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

var epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// clock is the world's time. Virtual time is free: unless the world is
// frozen, a sleep moves it forward at once.
type clock struct {
	mu       sync.Mutex
	now      time.Time
	frozen   bool
	sleepers map[*sleeper]struct{}
	changed  chan struct{} // closed and replaced when sleepers change
}

// sleeper is one sleep on a frozen clock; wake closes (under clock.mu)
// when it ends.
type sleeper struct {
	deadline time.Time
	wake     chan struct{}
}

func newSleeper() *sleeper { return &sleeper{wake: make(chan struct{})} }

func newClock(start time.Time) *clock {
	return &clock{now: start, sleepers: make(map[*sleeper]struct{}), changed: make(chan struct{})}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// sleep waits for d of the world's time, ctx, s's end, or died (ErrKilled)
// or exited to close. An s ended already never counts as a sleeper: a test
// that has seen a sleep block knows that nothing has ended it.
func (c *clock) sleep(ctx context.Context, d time.Duration, s *sleeper, died, exited <-chan struct{}) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	c.mu.Lock()
	if !c.frozen {
		c.now = c.now.Add(d)
		c.mu.Unlock()
		runtime.Gosched() // a sleeper in a loop must not starve who it waits for
		return nil
	}
	s.deadline = c.now.Add(d)
	if !closed(s.wake) {
		c.sleepers[s] = struct{}{}
		c.signal()
	}
	c.mu.Unlock()
	select {
	case <-s.wake:
	case <-ctx.Done():
	case <-died:
	case <-exited:
	}
	c.end(s)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case closed(died):
		return ErrKilled
	}
	return nil
}

// hold counts s as a sleeper that only end ends (LockRange's wait), for
// WaitSleepers.
func (c *clock) hold(s *sleeper) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.deadline = time.Unix(1<<62, 0)
	c.sleepers[s] = struct{}{}
	c.signal()
}

func (c *clock) end(s *sleeper) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(s)
}

func (c *clock) drop(s *sleeper) {
	if _, ok := c.sleepers[s]; ok {
		delete(c.sleepers, s)
		c.signal()
	}
	if !closed(s.wake) {
		close(s.wake)
	}
}

// signal tells WaitSleepers the sleepers changed; c.mu is held.
func (c *clock) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *clock) wakeDue() {
	for s := range c.sleepers {
		if !s.deadline.After(c.now) {
			c.drop(s)
		}
	}
}

// Now returns the world's time.
func (w *World) Now() time.Time { return w.u.fs.clock.Now() }

// Advance moves the world's time forward by d, ending the frozen sleeps
// whose deadline it reaches. It panics if d is negative.
func (w *World) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("fake: Advance(%v): time does not go back", d))
	}
	c := w.u.fs.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.wakeDue()
}

// Freeze makes sleeps block until Advance reaches their deadline (or
// their ctx ends, or their process dies). thaw undoes it: time moves to
// the latest deadline, as if each sleep had moved it.
func (w *World) Freeze() (thaw func()) {
	c := w.u.fs.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = true
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.frozen = false
		for s := range c.sleepers {
			if s.deadline.After(c.now) {
				c.now = s.deadline
			}
		}
		c.wakeDue()
	}
}

// WaitSleepers blocks until at least n sleeps are blocked on the frozen
// clock (or ctx ends): a test knows a goroutine waits, without sleeping.
func (w *World) WaitSleepers(ctx context.Context, n int) error {
	c := w.u.fs.clock
	for {
		c.mu.Lock()
		have, changed := len(c.sleepers), c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
