package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// workload is what the real-host tests and measurements of wasmhost ask a
// guest (or a native agent) to do with a lock, beside the plain take-and-
// report of main.go.
type workload struct {
	loop    *int           // critical sections to run
	agents  *int           // how many agents run -loop together
	handoff *int           // rounds of a two-agent handoff
	role    *int           // which of the two agents of a handoff (0 holds first)
	hold    *time.Duration // how long a handoff's holder keeps the lock once the other waits
	acquire *int           // uncontended Acquire+Release pairs to time
	dir     *string        // where the loop's marker and counter, the handoff's notes live
}

func workloadFlags() *workload {
	return &workload{
		loop:    flag.Int("loop", 0, "run `N` critical sections, checked with a marker and a counter in -dir"),
		agents:  flag.Int("agents", 1, "the `K` agents running -loop together: each takes its next section only once all have taken the one before"),
		handoff: flag.Int("handoff", 0, "run `N` rounds of handing the lock to and from another agent (-role), notes in -dir"),
		role:    flag.Int("role", 0, "0: hold the lock first in -handoff; 1: wait for it first"),
		hold:    flag.Duration("handoff-hold", 5*time.Millisecond, "how long a -handoff holder keeps the lock once the other waits"),
		acquire: flag.Int("acquire", 0, "time `N` uncontended Acquire+Release pairs"),
		dir:     flag.String("dir", "", "directory of the workload's marker, counter and notes"),
	}
}

func (w *workload) active() bool { return *w.loop > 0 || *w.handoff > 0 || *w.acquire > 0 }

func (w *workload) run(p *platform.Platform, path string) error {
	switch {
	case *w.loop > 0:
		return w.criticalSections(p, path)
	case *w.handoff > 0:
		return w.handoffs(p, path)
	}
	return w.acquires(p, path)
}

// criticalSections takes the lock -loop times; inside, it creates a marker
// file that a second holder would find there, adds one to a counter that
// two holders would lose an update of, and appends its (host) pid to the
// file "holders". The -agents agents of a run go in rounds: section k waits
// until the counter shows all agents' sections k-1, so that in every round
// all of them wait for the lock at once, whatever their kind and however
// long each takes to start. It prints "loop done=N overlaps=K".
func (w *workload) criticalSections(p *platform.Platform, path string) error {
	ctx := context.Background()
	marker, counter := filepath.Join(*w.dir, "inside"), filepath.Join(*w.dir, "counter")
	holders := filepath.Join(*w.dir, "holders")
	overlaps := 0
	for k := range *w.loop {
		if err := awaitCount(counter, k**w.agents); err != nil {
			return err
		}
		lock, err := proclock.Acquire(ctx, p, path, proclock.Options{Wait: true})
		if err != nil {
			return err
		}
		m, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			overlaps++
		} else if err != nil {
			return err
		} else {
			m.Close()
		}
		n, err := readInt(counter)
		if err != nil {
			return err
		}
		if err := os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o644); err != nil {
			return err
		}
		if err := appendLine(holders, strconv.Itoa(lock.Holder().PID)); err != nil {
			return err
		}
		if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := lock.Release(); err != nil {
			return err
		}
	}
	fmt.Printf("loop done=%d overlaps=%d\n", *w.loop, overlaps)
	return nil
}

// handoffs hands the lock back and forth with another agent: in round k the
// agent of role k%2 holds it, waits until the other says it is about to
// wait (file ready-k), keeps it -handoff-hold longer, notes the time
// (released-k) and releases; the other, waiting in Acquire, takes it,
// measures from that time and says so (took-k). It prints "handoff n=N median=D p90=D" of the
// handoffs it received.
func (w *workload) handoffs(p *platform.Platform, path string) error {
	ctx := context.Background()
	note := func(name string, k int) string { return filepath.Join(*w.dir, name+"-"+strconv.Itoa(k)) }
	var lock *proclock.Lock
	var err error
	if *w.role == 0 {
		if lock, err = proclock.Acquire(ctx, p, path, proclock.Options{}); err != nil {
			return err
		}
		fmt.Println("holding")
	}
	var got []time.Duration
	for k := range *w.handoff {
		if k%2 == *w.role {
			if err := awaitFile(note("ready", k)); err != nil {
				return err
			}
			time.Sleep(*w.hold)
			stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
			if err := os.WriteFile(note("released", k), []byte(stamp), 0o644); err != nil {
				return err
			}
			if err := lock.Release(); err != nil {
				return err
			}
			// Not back in Acquire before the other holds the lock: a
			// releaser that comes straight back can win it again.
			if err := awaitFile(note("took", k)); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(note("ready", k), nil, 0o644); err != nil {
			return err
		}
		if lock, err = proclock.Acquire(ctx, p, path, proclock.Options{Wait: true}); err != nil {
			return err
		}
		took := time.Now()
		released, err := readInt(note("released", k))
		if err != nil {
			return err
		}
		got = append(got, took.Sub(time.Unix(0, int64(released))))
		if err := os.WriteFile(note("took", k), nil, 0o644); err != nil {
			return err
		}
	}
	if lock != nil {
		if err := lock.Release(); err != nil {
			return err
		}
	}
	slices.Sort(got)
	fmt.Printf("handoff n=%d median=%s p90=%s\n", len(got), quantile(got, 0.5), quantile(got, 0.9))
	return nil
}

// acquires times -acquire uncontended Acquire+Release pairs; it prints
// "acquire n=N per_op=D".
func (w *workload) acquires(p *platform.Platform, path string) error {
	ctx := context.Background()
	start := time.Now()
	for range *w.acquire {
		lock, err := proclock.Acquire(ctx, p, path, proclock.Options{})
		if err != nil {
			return err
		}
		if err := lock.Release(); err != nil {
			return err
		}
	}
	fmt.Printf("acquire n=%d per_op=%s\n", *w.acquire, time.Since(start)/time.Duration(*w.acquire))
	return nil
}

// awaitFile polls for name: the agents share nothing but the filesystem.
func awaitFile(name string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := os.Stat(name)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// awaitCount polls the counter file name until it shows at least n. It is
// read outside the lock, so a reading caught between the writer's truncate
// and its write counts as "not yet"; the counter only grows.
func awaitCount(name string, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := readInt(name)
		if err == nil && got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("counter %s still %d after a minute (%v); want %d: an agent stopped or an update was lost", name, got, err, n)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func appendLine(name, line string) error {
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

// readInt reads a decimal number from name; a missing file is 0.
func readInt(name string) (int, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(b))
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}
