package platform_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/proclock/proclock/platform"
)

// FuzzJudge: Judge never panics, and whatever the two identities and the
// lookup say, its verdict keeps the rules that protect a lock (docs/design.md, judge order):
// another host is never judged; a failing lookup is never death (EPERM
// read as dead would let anyone reclaim a live lock); the lookup is asked
// at most once, about the holder's pid, only when that pid can mean
// anything here; and only a differing start time makes a running pid dead
// (pid reuse).
func FuzzJudge(f *testing.F) {
	// here: host, boot, pid, start, namespace; holder: the same five;
	// lookup: exists, start time, fails.
	f.Add("h", "b1", 100, uint64(5000), uint64(4026531836), "h", "b1", 200, uint64(7000), uint64(4026531836), true, uint64(7000), false)   // running
	f.Add("h", "b1", 100, uint64(5000), uint64(4026531836), "far", "b1", 200, uint64(7000), uint64(4026531836), true, uint64(7000), false) // other host
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b1", 200, uint64(7000), uint64(2), true, uint64(7000), false)                     // other namespace
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b2", 200, uint64(7000), uint64(2), true, uint64(7000), false)                     // other boot
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b1", 200, uint64(7000), uint64(1), false, uint64(0), false)                       // pid gone
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b1", 200, uint64(7000), uint64(1), true, uint64(7001), false)                     // pid reused
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b1", 200, uint64(7000), uint64(1), true, uint64(0), false)                        // another user's: start hidden
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b1", 200, uint64(7000), uint64(1), false, uint64(0), true)                        // lookup fails (EPERM)
	f.Add("h", "", 100, uint64(0), uint64(0), "", "", 4242, uint64(0), uint64(0), true, uint64(9), false)                                  // legacy bare pid
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b1", 0, uint64(0), uint64(1), true, uint64(0), false)                             // pid 0
	f.Add("h", "b1", 100, uint64(5000), uint64(1), "h", "b1", -1, uint64(0), uint64(1), true, uint64(0), true)                             // pid -1
	f.Add("", "", 0, uint64(0), uint64(0), "", "", 1, uint64(0), uint64(0), true, uint64(0), false)                                        // nothing known here

	f.Fuzz(func(t *testing.T,
		hereHost, hereBoot string, herePID int, hereStart, hereNS uint64,
		holderHost, holderBoot string, holderPID int, holderStart, holderNS uint64,
		exists bool, infoStart uint64, fails bool,
	) {
		here := platform.Identity{Host: hereHost, BootID: hereBoot, PID: herePID, StartTime: hereStart, PIDNamespace: hereNS}
		holder := platform.Identity{Host: holderHost, BootID: holderBoot, PID: holderPID, StartTime: holderStart, PIDNamespace: holderNS}
		errLookup := errors.New("lookup failed")
		var calls []int
		lookup := func(pid int) (platform.PIDInfo, error) {
			calls = append(calls, pid)
			if fails {
				return platform.PIDInfo{}, errLookup
			}
			return platform.PIDInfo{Exists: exists, StartTime: infoStart}, nil
		}
		j := platform.Judge(here, holder, lookup)

		if len(calls) > 1 {
			t.Fatalf("lookup called %d times: %v", len(calls), calls)
		}
		called := len(calls) == 1
		if called && (calls[0] <= 0 || calls[0] != holder.PID) {
			t.Fatalf("lookup of pid %d for holder pid %d", calls[0], holder.PID)
		}
		otherHost := holder.Host != "" && holder.Host != here.Host
		if otherHost && (j.Verdict != platform.Unknown || j.Reason != platform.ReasonOtherHost || called) {
			t.Fatalf("holder of another host: %+v, lookup called: %v; want unknown, never looked up", j, called)
		}
		if called {
			otherBoot := holder.BootID != "" && here.BootID != "" && holder.BootID != here.BootID
			otherNS := holder.PIDNamespace != 0 && here.PIDNamespace != 0 && holder.PIDNamespace != here.PIDNamespace
			if otherHost || otherBoot || otherNS {
				t.Fatalf("looked up a pid of another host, boot or namespace: %+v vs %+v", holder, here)
			}
		}
		if called && fails {
			if j.Verdict == platform.Dead {
				t.Fatalf("a failing lookup judged dead: %+v", j)
			}
			if !errors.Is(j.Err, errLookup) || j.Reason != platform.ReasonLookupFailed {
				t.Fatalf("a failing lookup: %+v; want its error and ReasonLookupFailed", j)
			}
		}
		if (j.Err != nil) != (j.Reason == platform.ReasonLookupFailed) {
			t.Fatalf("Err %v with reason %q", j.Err, j.Reason)
		}
		wantReasons := map[platform.Verdict][]platform.Reason{
			platform.Alive:   {platform.ReasonRunning, platform.ReasonLookupFailed},
			platform.Dead:    {platform.ReasonOtherBoot, platform.ReasonPIDGone, platform.ReasonPIDReused},
			platform.Unknown: {platform.ReasonOtherHost, platform.ReasonOtherNamespace},
		}
		reasons, ok := wantReasons[j.Verdict]
		if !ok || !slices.Contains(reasons, j.Reason) {
			t.Fatalf("verdict %v with reason %q", j.Verdict, j.Reason)
		}
		// A pid that runs is dead only when both start times are known
		// and differ: the pid was reused.
		if called && !fails && exists {
			reused := holder.StartTime != 0 && infoStart != 0 && holder.StartTime != infoStart
			if (j.Verdict == platform.Dead) != reused || (reused && j.Reason != platform.ReasonPIDReused) {
				t.Fatalf("running pid, start %d recorded, %d now: %+v", holder.StartTime, infoStart, j)
			}
		}
		if called && !fails && !exists && (j.Verdict != platform.Dead || j.Reason != platform.ReasonPIDGone) {
			t.Fatalf("pid gone: %+v; want dead", j)
		}
		// The same question gets the same answer.
		calls = nil
		if again := platform.Judge(here, holder, lookup); again.Verdict != j.Verdict || again.Reason != j.Reason {
			t.Fatalf("judged %+v, then %+v", j, again)
		}
	})
}
