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
	"go.uber.org/zap"

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
			got := make(chan *Lock)
			go func() {
				l, err := Acquire(ctx, c2, "/b/handoff", Options{TTL: 10 * time.Second, Wait: true})
				if err != nil {
					b.Error(err)
				}
				got <- l
			}()
			waitKeys(b, c1, "/b/handoff", 2)
			start := time.Now()
			h.Release()
			l := <-got
			total += time.Since(start)
			l.Release()
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "handoff-ns/op")
	})
	b.Run("etcdctl-mutex", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			s1, _ := concurrency.NewSession(c1, concurrency.WithTTL(10))
			s2, _ := concurrency.NewSession(c2, concurrency.WithTTL(10))
			m1, m2 := concurrency.NewMutex(s1, "/b/handoff-mutex"), concurrency.NewMutex(s2, "/b/handoff-mutex")
			if err := m1.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			got := make(chan error)
			go func() { got <- m2.Lock(ctx) }()
			waitKeys(b, c1, "/b/handoff-mutex", 2)
			start := time.Now()
			m1.Unlock(ctx)
			if err := <-got; err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
			m2.Unlock(ctx)
			s1.Close()
			s2.Close()
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "handoff-ns/op")
	})
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
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{args[0]}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
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
			got := make(chan *Lock)
			go func() {
				l, err := Acquire(ctx, c, "/b/killed", Options{TTL: time.Second, Wait: true, LockDelay: -1})
				if err != nil {
					b.Error(err)
				}
				got <- l
			}()
			waitKeys(b, c, "/b/killed", 2)
			start := time.Now()
			p.kill()
			l := <-got
			total += time.Since(start)
			l.Release()
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "kill-to-next-ns/op")
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
			s, _ := concurrency.NewSession(c, concurrency.WithTTL(1))
			m := concurrency.NewMutex(s, "/b/killed-etcdctl")
			got := make(chan error)
			go func() { got <- m.Lock(ctx) }()
			waitKeys(b, c, "/b/killed-etcdctl", 2)
			start := time.Now()
			cmd.Process.Kill()
			cmd.Wait()
			if err := <-got; err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
			m.Unlock(ctx)
			s.Close()
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "kill-to-next-ns/op")
	})
}
