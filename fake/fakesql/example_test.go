package fakesql_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
)

func ExampleOpen() {
	w := fake.New()
	_ = w.Mkdir("/locks", 0o755)
	holder, waiter := w.Spawn(), w.Spawn()
	take := func(p *fake.Process) (*sqlite3.Conn, error) {
		c, err := fakesql.Open(p, "/locks/app.lock", sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE)
		if err != nil {
			return nil, err
		}
		return c, c.Exec(`PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF; BEGIN EXCLUSIVE;`)
	}
	held, err := take(holder)
	fmt.Println(err)
	defer held.Close()
	refused, err := take(waiter)
	fmt.Println(errors.Is(err, sqlite3.BUSY))
	refused.Close()
	holder.Kill() // the kernel drops its locks
	taken, err := take(waiter)
	fmt.Println(err)
	defer taken.Close()
	// Output:
	// <nil>
	// true
	// <nil>
}

func ExampleSQLPlatform() {
	w := fake.New()
	holder, waiter := w.Spawn(), w.Spawn()
	// The holder takes the lock as on linux (byte-range locks), the
	// waiter through SQL as on darwin: the same lock either way.
	l, err := proclock.Acquire(context.Background(), holder.Platform(), "/tmp/app.lock", proclock.Options{})
	fmt.Println(err)
	defer l.Release()
	_, err = proclock.Acquire(context.Background(), fakesql.SQLPlatform(waiter), "/tmp/app.lock", proclock.Options{})
	fmt.Println(errors.Is(err, proclock.ErrHeld))
	// Output:
	// <nil>
	// true
}
