package cluster

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/proclock/proclock"
)

// One holder; another acquisition, in this process, is told it is held
// and by whom; after release it takes the lock, and the fence rose.
func TestAcquireHeldRelease(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	ctx := ctxFor(t, 30*time.Second)
	a, err := Acquire(ctx, c, "/t/basic", Options{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(ctx, c, "/t/basic", Options{TTL: time.Second})
	held, ok := errors.AsType[*proclock.HeldError](err)
	if !ok || !errors.Is(err, proclock.ErrHeld) {
		t.Fatalf("second Acquire = %v; want a *HeldError", err)
	}
	if held.Holder == nil || held.Holder.PID != os.Getpid() || held.Path != "/t/basic" || held.Since.IsZero() {
		t.Fatalf("held error = %+v; want this process named, with a time", held)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if a.Err() != nil {
		t.Fatalf("Err after a clean release = %v", a.Err())
	}
	select {
	case <-a.Lost():
		t.Fatal("Lost closed by a clean release")
	default:
	}
	b, err := Acquire(ctx, c, "/t/basic", Options{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence() <= a.Fence() {
		t.Fatalf("fence %d after %d; want it to rise", b.Fence(), a.Fence())
	}
	if b.LockDelay() != 0 {
		t.Fatalf("lock-delay %v after a clean release; want none", b.LockDelay())
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
}

// The key's value names the holder's user and command line besides its
// process (issue 29 item 12: it named host, pid and times only).
func TestKeyNamesUserAndCommand(t *testing.T) {
	t.Setenv("USER", "proclock-test-user")
	tc := startCluster(t, 1)
	c := tc.client(t)
	ctx := ctxFor(t, 30*time.Second)
	l, err := Acquire(ctx, c, "/t/value", Options{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	resp, err := c.Get(ctx, l.Key())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the lock's key: %v, %v", resp, err)
	}
	var v struct {
		User    string   `json:"user"`
		Command []string `json:"command"`
		PID     int      `json:"pid"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		t.Fatal(err)
	}
	if v.User != "proclock-test-user" || !slices.Equal(v.Command, os.Args) || v.PID != os.Getpid() {
		t.Errorf("the key's value %s; want user proclock-test-user, command %q, pid %d", resp.Kvs[0].Value, os.Args, os.Getpid())
	}
}
