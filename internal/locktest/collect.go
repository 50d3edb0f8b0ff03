package locktest

import "runtime"

// CollectUntil runs the garbage collector, allocating between runs, until
// done reports true or rounds have passed; it reports whether done did. A
// cleanup (an unreachable file's close) runs on the runtime's own
// goroutine some time after the collection that found its object
// unreachable, hence the rounds and the yield after each.
func CollectUntil(rounds int, done func() bool) bool {
	var keep [][]byte
	for i := range rounds {
		if done() {
			return true
		}
		for range 1000 {
			keep = append(keep, make([]byte, 1024))
		}
		keep = keep[:i%10]
		runtime.GC()
		runtime.Gosched()
	}
	runtime.KeepAlive(keep)
	return done()
}
