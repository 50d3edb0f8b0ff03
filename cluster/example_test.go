package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/cluster"
)

// A nightly job that must run once in the cluster: take the lock without
// waiting, stop working when it is lost, and fence every write.
func ExampleAcquire() {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lock, err := cluster.Acquire(ctx, c, "jobs/nightly", cluster.Options{TTL: 10 * time.Second})
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		fmt.Println("already running:", held)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release()

	work, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		<-lock.Lost() // Options.Margin before anyone else can hold it
		stop()
	}()
	// A write that etcd refuses once the lock has passed on.
	resp, err := c.Txn(work).If(lock.Guard()).Then(clientv3.OpPut("jobs/nightly-state", "done")).Commit()
	if err == nil && !resp.Succeeded {
		fmt.Println("lost the lock before the write:", lock.Err())
	}
}

// Who holds a lock, and whether a lock-delay is being served.
func ExampleInspect() {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	st, err := cluster.Inspect(context.Background(), c, "jobs/nightly")
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case st.State != proclock.StateHeld:
		fmt.Println("free")
	case st.Holder != nil:
		fmt.Printf("held by %v since %v, fence %d, %v of its lease left, %d waiting\n", st.Holder, st.AcquiredAt, st.Fence, st.TTLLeft, st.Waiters)
	default:
		fmt.Println("held:", st.Reason) // an etcdctl lock, with its lease
	}
}
