package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// targetOptionCase is one option of run or status, tried on a lock on
// this host (a PATH) and on a backend's lock (the fake's): the exit code
// each gives with a free lock, and the words a refusal must say.
type targetOptionCase struct {
	value            []string // after the option's name; none for a switch
	command          bool     // the option gives COMMAND itself (-c)
	onPath, onTarget int      // exit codes
	refusal          string   // in stderr when refused for the kind of lock (exit 2 where the other is 0)
}

// TestOptionsOnBothTargets: every option of run and status, in every
// spelling, on a PATH and on a backend's name. A host-only option
// (--remove, --mechanism, --allow-network-fs) is refused on a backend's
// name with exit 2 and says why, as a backend's option (--fake-ttl, the
// etcd backend's --ttl) is on a PATH; the others work on both (-o among
// them: a backend's lock has no descriptor for COMMAND to inherit, so -o
// asks for what happens anyway, as -x does), or are refused on both
// (-s, -u, -F). Before the fix, the host-only options exited 0 on a
// backend's name (review finding 11). A new option without a row here
// fails the test.
func TestOptionsOnBothTargets(t *testing.T) {
	const hostOnly = "applies to locks on this host (a PATH)"
	const backendOnly = "applies to cluster locks"
	runCases := map[string]targetOptionCase{
		"-n":                 {},
		"-w":                 {value: []string{"1"}},
		"-E":                 {value: []string{"75"}},
		"-v":                 {},
		"-q":                 {},
		"-c":                 {value: []string{"true"}, command: true},
		"-x":                 {},
		"-o":                 {},
		"--remove":           {onTarget: exitUsage, refusal: hostOnly},
		"--allow-network-fs": {onTarget: exitUsage, refusal: hostOnly},
		"--mechanism":        {value: []string{"file"}, onTarget: exitUsage, refusal: hostOnly},
		"-s":                 {onPath: exitUsage, onTarget: exitUsage},
		"-u":                 {onPath: exitUsage, onTarget: exitUsage},
		"-F":                 {onPath: exitUsage, onTarget: exitUsage},
		"-h":                 {},
		"-V":                 {},
		"--grace":            {value: []string{"1s"}},
		"--fake-ttl":         {value: []string{"10"}, onPath: exitUsage, refusal: backendOnly},
	}
	statusCases := map[string]targetOptionCase{
		"--json":      {},
		"--mechanism": {value: []string{"sqlite"}, onTarget: exitUsage, refusal: hostOnly},
		"-h":          {},
		"-V":          {},
		"--fake-ttl":  {value: []string{"10"}, onPath: exitUsage, refusal: backendOnly},
	}
	backends := []Backend{&fakeBackend{}}
	var ro runOptions
	var rx runExtra
	runTable := append(runOptionTable(&ro, new(bool), new(*string)), rx.options(backends)...)
	var so statusOptions
	statusTable := append(append(statusOptionTable(&so), rx.backendOptions(backends)...), helpOptions...)
	for _, sub := range []struct {
		name  string
		table []option
		cases map[string]targetOptionCase
	}{{"run", runTable, runCases}, {"status", statusTable, statusCases}} {
		for _, opt := range sub.table {
			tc, ok := sub.cases[opt.names[0]]
			if !ok {
				t.Errorf("%s option %s has no case here: say what it does on a PATH and on a backend's name", sub.name, opt.names[0])
				continue
			}
			for _, spelling := range opt.names {
				for _, target := range []string{"PATH", "backend"} {
					t.Run(sub.name+" "+spelling+" on a "+target, func(t *testing.T) {
						name, want := filepath.Join(t.TempDir(), "x.lock"), tc.onPath
						if target == "backend" {
							name, want = "fake:"+t.TempDir(), tc.onTarget
						}
						args := append(append([]string{sub.name, spelling}, tc.value...), name)
						if sub.name == "run" && !tc.command {
							args = append(args, "--", "true")
						}
						r := startFake(t, args...)
						code := r.wait()
						if code != want {
							t.Fatalf("proclock %q: exit %d, want %d; stderr: %s", args, code, want, r.stderr.String())
						}
						// A refusal for the kind of lock names the
						// option and says why.
						if want == exitUsage && tc.refusal != "" {
							if msg := r.stderr.String(); !strings.Contains(msg, tc.refusal) || !strings.Contains(msg, opt.names[0]) && !strings.Contains(msg, opt.names[len(opt.names)-1]) {
								t.Fatalf("proclock %q said %q; want it to name the option and say %q", args, msg, tc.refusal)
							}
						}
					})
				}
			}
		}
	}
}
