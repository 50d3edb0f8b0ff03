package fakesql_test

import (
	"errors"
	"fmt"

	"github.com/ncruces/go-sqlite3"

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

func ExampleVFSName() {
	w := fake.New()
	p := w.Spawn()
	// A connection of p's, opened with a URI of the test's own.
	c, _ := sqlite3.Open("file:/tmp/notes.db?vfs=" + fakesql.VFSName(p))
	defer c.Close()
	_ = c.Exec(`CREATE TABLE notes(text)`)
	fi, _ := w.Stat("/tmp/notes.db")
	fmt.Println(fi.Size() > 0)
	// Output: true
}
