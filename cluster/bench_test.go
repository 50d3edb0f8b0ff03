package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/proclock/proclock/internal/locktest"
)

// The benchmarks measure this package beside etcdctl lock on one embedded
// member on loopback (TickMs 10): etcdctl lock is concurrency.Mutex on a
// Session of its own per run, so the in-process figures compare with
// that, and the whole-process ones run the etcdctl v3.7.3 binary itself.
//
//	cd cluster && go test -run '^$' -bench . -benchmem -benchtime 200x
//
// The SIGKILL ones take over a TTL each: give them -benchtime 5x.

// Acquire and Release, uncontended, in this process.
func BenchmarkAcquireRelease(b *testing.B) {
	tc := startCluster(b, 1)
	c := tc.client(b)
	ctx := context.Background()
	b.Run("proclock", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			l, err := Acquire(ctx, c, "/b/acq", Options{TTL: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("etcdctl-mutex", func(b *testing.B) {
		for b.Loop() {
			s, err := concurrency.NewSession(c, concurrency.WithTTL(10))
			if err != nil {
				b.Fatal(err)
			}
			m := concurrency.NewMutex(s, "/b/acq-mutex")
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}

// A holder lets go while another acquisition waits: the time from the
// start of the release to the waiter's return (handoff-ns/op).
func BenchmarkHandoff(b *testing.B) {
	tc := startCluster(b, 1)
	c1, c2 := tc.client(b), tc.client(b)
	ctx := context.Background()
	b.Run("proclock", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			h, err := Acquire(ctx, c1, "/b/handoff", Options{TTL: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			total += timeHandoff(b, c2, "/b/handoff", Options{TTL: 10 * time.Second}, func() { h.Release() })
		}
		reportPer(b, total, "handoff-ns/op")
	})
	b.Run("etcdctl-mutex", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			s1, _ := concurrency.NewSession(c1, concurrency.WithTTL(10))
			m1 := concurrency.NewMutex(s1, "/b/handoff-mutex")
			if err := m1.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			total += timeMutexHandoff(b, c2, "/b/handoff-mutex", 10, func() { m1.Unlock(ctx) })
			s1.Close()
		}
		reportPer(b, total, "handoff-ns/op")
	})
}

// timeHandoff starts a waiting Acquire of name on c (opts with Wait)
// while the lock is held, and once its key is queued, calls let, which
// makes the holder let go one way or another. It returns the time from
// let's start to the waiter's return, and releases the waiter's lock.
func timeHandoff(b *testing.B, c *clientv3.Client, name string, opts Options, let func()) time.Duration {
	b.Helper()
	opts.Wait = true
	got := make(chan *Lock, 1)
	go func() {
		l, err := Acquire(context.Background(), c, name, opts)
		if err != nil {
			b.Error(err)
		}
		got <- l
	}()
	waitKeys(b, c, name, 2)
	start := time.Now()
	let()
	l := <-got
	took := time.Since(start)
	if l == nil {
		b.FailNow()
	}
	l.Release()
	return took
}

// timeMutexHandoff is timeHandoff for etcdctl lock's way, a
// concurrency.Mutex on a Session of its own with the TTL in seconds.
func timeMutexHandoff(b *testing.B, c *clientv3.Client, name string, ttl int, let func()) time.Duration {
	b.Helper()
	ctx := context.Background()
	s, err := concurrency.NewSession(c, concurrency.WithTTL(ttl))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := concurrency.NewMutex(s, name)
	got := make(chan error, 1)
	go func() { got <- m.Lock(ctx) }()
	waitKeys(b, c, name, 2)
	start := time.Now()
	let()
	if err := <-got; err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	m.Unlock(ctx)
	return took
}

// reportPer reports total over the benchmark's iterations as unit.
func reportPer(b *testing.B, total time.Duration, unit string) {
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), unit)
}

// A whole process that connects, takes the lock, lets go and exits: the
// test binary doing it with this package, and etcdctl lock NAME -- true.
func BenchmarkProcess(b *testing.B) {
	tc := startCluster(b, 1)
	ep := tc.endpoints()[0]
	bin := etcdctl(b)
	b.Run("proclock", func(b *testing.B) {
		for b.Loop() {
			locktest.Output(b, onceRole.Command(ep, "/b/process"))
		}
	})
	b.Run("etcdctl", func(b *testing.B) {
		for b.Loop() {
			locktest.Output(b, exec.Command(bin, "--endpoints", ep, "lock", "/b/process-etcdctl", "--", "true"))
		}
	})
}

// onceRole takes the lock named by its second argument at the endpoint
// named by its first, lets go and exits 0.
var onceRole = locktest.NewRole("cluster-once", func(args []string) int {
	c, err := clientv3.New(clientConfig([]string{args[0]}))
	if err != nil {
		return 1
	}
	defer c.Close()
	l, err := Acquire(context.Background(), c, args[1], Options{})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	if err := l.Release(); err != nil {
		return 1
	}
	return 0
})

// The holder's process is killed (SIGKILL) while another waits: the time
// to the waiter's return is the lease's TTL (1 s, the server's minimum
// with these ticks) plus the server's expiry sweep, and, for proclock,
// the lock-delay (here none; by default it is the TTL again).
func BenchmarkKilledHolder(b *testing.B) {
	tc := startCluster(b, 1)
	c := tc.client(b)
	ctx := context.Background()
	bin := etcdctl(b)
	b.Run("proclock-ttl1s", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			p := spawnPeer(b, peerConfig{endpoints: tc.endpoints(), ttl: time.Second, lockDelay: -1})
			p.mustAcquire(ctx, "/b/killed", false)
			total += timeHandoff(b, c, "/b/killed", Options{TTL: time.Second, LockDelay: -1}, p.kill)
		}
		reportPer(b, total, "kill-to-next-ns/op")
	})
	b.Run("etcdctl-ttl1s", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			cmd := exec.Command(bin, "--endpoints", tc.endpoints()[0], "lock", "--ttl", "1", "/b/killed-etcdctl")
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 256)
			if n, _ := out.Read(buf); !strings.HasPrefix(string(buf[:n]), "/b/killed-etcdctl/") {
				b.Fatalf("etcdctl lock printed %q", buf[:n])
			}
			total += timeMutexHandoff(b, c, "/b/killed-etcdctl", 1, func() {
				cmd.Process.Kill()
				cmd.Wait()
			})
		}
		reportPer(b, total, "kill-to-next-ns/op")
	})
}

// A revoke of the holder's lease, or a delete of its key, from another
// client, while the lock is held with TTL 30 s (a keepalive every 10 s):
// the time from the call's start to Lost (seen-ns/op). The holder's watch
// on its own key sees it; issue 21 asks for 200 ms, etcd's own
// Session.Done takes up to TTL/3. TestRevokeAndDeleteSeen checks that it
// is the watch that tells, without timing it.
func BenchmarkLossSeen(b *testing.B) {
	tc := startCluster(b, 1)
	holder, other := tc.client(b), tc.client(b)
	ctx := context.Background()
	for _, how := range []string{"revoke", "delete"} {
		b.Run(how, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				l, err := Acquire(ctx, holder, "/b/seen", Options{TTL: 30 * time.Second, LockDelay: -1})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if how == "revoke" {
					_, err = other.Revoke(ctx, l.Lease())
				} else {
					_, err = other.Delete(ctx, l.Key())
				}
				if err != nil {
					b.Fatal(err)
				}
				<-l.Lost()
				total += time.Since(start)
				l.Release()
			}
			reportPer(b, total, "seen-ns/op")
		})
	}
}
