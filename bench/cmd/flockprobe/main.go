// Command flockprobe is the smallest program that tells whether a
// gofrs/flock lock is held: it tries to take it and lets go at once. It is
// what bench's BenchmarkStatusCold sets `proclock status` beside.
//
//	flockprobe PATH
//
// Exit status: 0 free, 1 held, 2 an error.
package main

import (
	"fmt"
	"os"

	"github.com/gofrs/flock"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: flockprobe PATH")
		os.Exit(2)
	}
	fl := flock.New(os.Args[1])
	ok, err := fl.TryLock()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if !ok {
		fmt.Println(os.Args[1] + ": held")
		os.Exit(1)
	}
	fl.Unlock()
	fmt.Println(os.Args[1] + ": free")
}
