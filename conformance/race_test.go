//go:build race

package conformance_test

// raceEnabled is set under the race detector, which makes each acquisition
// some ten times slower: the stress test then runs fewer rounds, still
// several processes at once (the race detector is after this process's
// data races; overlaps between processes are counted either way).
const raceEnabled = true
