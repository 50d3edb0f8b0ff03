// Command guest is an agent that takes a proclock lock and says what it
// got. Built for wasip1 (run it under wasmhost, wazero or wasmtime) or js
// (run it under Node.js), it is a wasm-hosted agent; built for the host's
// own OS, it is a native one. See docs/wasm.md.
//
//	guest [-wait] [-hold] [-mechanism auto|file] PATH
//
// It prints one line: "holds pid=P host=H mechanism=M" and exits 0, or
// "held pid=P host=H" (pid 0: holder unknown) and exits 1, or an error and
// exits 2. With -wait it prints the holder's line once, then waits for the
// lock; with -hold it keeps the lock until its standard input closes, then
// prints "released". Test workloads (-loop, -handoff, -acquire) are in
// workload.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

func main() {
	wait := flag.Bool("wait", false, "wait for the lock when it is held")
	hold := flag.Bool("hold", false, "keep the lock until stdin closes")
	mech := flag.String("mechanism", "auto", "auto, or file: the file mechanism even where SQLite can lock")
	w := workloadFlags()
	flag.Parse()
	if flag.NArg() != 1 || (*mech != "auto" && *mech != "file") {
		fmt.Fprintln(os.Stderr, "usage: guest [-wait] [-hold] [-mechanism auto|file] PATH")
		os.Exit(2)
	}
	// In a wasm guest, Native reads the host process's identity from the
	// /proc its host mounted, and has no SQLite: the file mechanism.
	p := platform.Native()
	if *mech == "file" {
		p = p.WithoutSQLite()
	}
	path := flag.Arg(0)
	if w.active() {
		exitOn(w.run(p, path))
		return
	}
	ctx := context.Background()
	lock, err := proclock.Acquire(ctx, p, path, proclock.Options{})
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		printHeld(held)
		if !*wait {
			os.Exit(1)
		}
		lock, err = proclock.Acquire(ctx, p, path, proclock.Options{Wait: true})
	}
	exitOn(err)
	pid, host := holderOf(lock.Holder())
	fmt.Printf("holds pid=%d host=%s mechanism=%s\n", pid, host, lock.Mechanism())
	if *hold {
		io.Copy(io.Discard, os.Stdin)
	}
	exitOn(lock.Release())
	if *hold {
		fmt.Println("released")
	}
}

func printHeld(held *proclock.HeldError) {
	pid, host := holderOf(held.Holder)
	fmt.Printf("held pid=%d host=%s\n", pid, host)
}

func holderOf(id *platform.Identity) (pid int, host string) {
	if id == nil {
		return 0, "?"
	}
	return id.PID, id.Host
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "guest:", err)
		os.Exit(2)
	}
}
