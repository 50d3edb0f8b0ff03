package cluster

import (
	"testing"
	"time"
)

// The local deadline is anchored at the moment a keepalive was sent, not
// when its acknowledgement came: an acknowledgement delayed in flight
// (here 0.8 of the renewal interval) gives no more time than a prompt
// one, and an old keepalive's late acknowledgement never moves the
// deadline back.
func TestDeadlineArithmetic(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const ttl, margin = 2 * time.Second, 200 * time.Millisecond
	v := validity{margin: margin}
	v.renewed(t0, ttl) // the grant, sent at t0
	want := t0.Add(ttl - ttl/100 - margin)
	if !v.deadline.Equal(want) {
		t.Fatalf("deadline after the grant = %v after sending; want %v", v.deadline.Sub(t0), want.Sub(t0))
	}
	if v.passed(want.Add(-time.Nanosecond)) || !v.passed(want) {
		t.Fatalf("passed: wrong side of the deadline")
	}
	// A keepalive sent at t0+666ms, acknowledged 533 ms later.
	sent := t0.Add(666 * time.Millisecond)
	v.renewed(sent, ttl)
	if want := sent.Add(ttl - ttl/100 - margin); !v.deadline.Equal(want) {
		t.Fatalf("deadline after a delayed acknowledgement = %v after its sending; want %v", v.deadline.Sub(sent), want.Sub(sent))
	}
	// The grant's TTL raised by the server counts as granted.
	later := t0.Add(time.Second)
	v.renewed(later, 5*time.Second)
	if want := later.Add(5*time.Second - 50*time.Millisecond - margin); !v.deadline.Equal(want) {
		t.Fatalf("deadline with a longer granted TTL = %v; want %v", v.deadline.Sub(later), want.Sub(later))
	}
	before := v.deadline
	v.renewed(t0.Add(700*time.Millisecond), ttl) // an older keepalive, answered last
	if !v.deadline.Equal(before) {
		t.Fatalf("an older keepalive's acknowledgement moved the deadline from %v to %v", before, v.deadline)
	}
}

// Options: the TTL asked for is whole seconds, rounded up; the margin and
// the lock-delay default from the TTL granted.
func TestOptionDefaults(t *testing.T) {
	for _, tc := range []struct {
		opts             Options
		granted          time.Duration
		ttl              int64
		margin, lockDela time.Duration
	}{
		{Options{}, 10 * time.Second, 10, time.Second, 10 * time.Second},
		{Options{TTL: 1500 * time.Millisecond}, 2 * time.Second, 2, 200 * time.Millisecond, 2 * time.Second},
		{Options{TTL: time.Second}, time.Second, 1, 100 * time.Millisecond, time.Second},
		{Options{TTL: time.Second, Margin: 300 * time.Millisecond, LockDelay: -1}, time.Second, 1, 300 * time.Millisecond, 0},
		{Options{LockDelay: 5 * time.Second}, 10 * time.Second, 10, time.Second, 5 * time.Second},
	} {
		if got := tc.opts.ttl(); got != tc.ttl {
			t.Errorf("%+v: ttl %d; want %d", tc.opts, got, tc.ttl)
		}
		if got := tc.opts.margin(tc.granted); got != tc.margin {
			t.Errorf("%+v: margin %v; want %v", tc.opts, got, tc.margin)
		}
		if got := tc.opts.lockDelay(tc.granted); got != tc.lockDela {
			t.Errorf("%+v: lock-delay %v; want %v", tc.opts, got, tc.lockDela)
		}
	}
}
