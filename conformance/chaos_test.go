//go:build linux

package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/peer"
)

const (
	chaosPeers = 4
	// Kills come every killMin + [0, killSpread).
	chaosKillMin    = 20 * time.Millisecond
	chaosKillSpread = 60 * time.Millisecond
	// chaosHold bounds each critical section's work (see ChaosPlan.Hold).
	chaosHold = 2 * time.Millisecond
	// chaosReacquireBound is the generous bound on kill-to-reacquire:
	// speed is for benchmarks, this only catches a lock that stays lost.
	chaosReacquireBound = 5 * time.Second
	// chaosWedge ends a run in which no section completes for this long.
	chaosWedge = 20 * time.Second
	// chaosStall is a wedge too: no section completed for this long while
	// nobody was inside (the marker absent). A section holds for at most
	// chaosHold, and the waiters are woken by the holder's going: no crash
	// of a proclock process may keep the others out for longer than it
	// takes to see that process dead (docs/protocol.md, "Every record
	// appears whole"), not for the 30 s of an unwritten file.
	chaosStall = time.Second
)

// Four processes take one lock in a loop while the test SIGKILLs one of
// them every 20–80 ms, at whatever step it is (inside its critical
// section, or anywhere in Acquire and Release: creating or writing a
// record, converting, reclaiming), and starts a new process in its place,
// until the log has its sections: never two holders (the occupancy
// marker), no lost update (the log's line numbers), no wedge (chaosStall:
// a second without a section while nobody is inside), and after every kill
// the lock is taken again within a bound (its median and max are logged).
// PROCLOCK_CHAOS_INSIDE=1 kills only processes inside their critical
// section, as this test did before; PROCLOCK_CHAOS_SECTIONS sets the
// sections of a run (more kills).
func TestNativeChaos(t *testing.T) {
	sections := 2000
	if testing.Short() {
		sections = 200
	}
	if n, err := strconv.Atoi(os.Getenv("PROCLOCK_CHAOS_SECTIONS")); err == nil && n > 0 {
		sections = n // a longer run, by hand: more kills
	}
	sqlite, file := proclock.MechanismSQLite, proclock.MechanismFile
	for _, tc := range []struct {
		mechs  []proclock.Mechanism
		remove bool
	}{
		{[]proclock.Mechanism{sqlite}, false},
		{[]proclock.Mechanism{sqlite}, true},
		{[]proclock.Mechanism{file}, false},
		{[]proclock.Mechanism{sqlite, file}, false}, // a native process beside a wasm-hosted one
		// Each SQLite holder removes the file as it lets go, and file
		// processes create it anew: the path changes hands most.
		{[]proclock.Mechanism{sqlite, file}, true},
		{[]proclock.Mechanism{peer.MechanismSQLiteSQL, file}, true},
	} {
		mechs := tc.mechs
		mech := mechsName(mechs)
		if tc.remove {
			mech += "/RemoveOnRelease"
		}
		t.Run(mech, func(t *testing.T) {
			began := time.Now()
			r := runChaos(t, mechs, sections, proclock.Options{RemoveOnRelease: tc.remove})
			took := time.Since(began)

			lines := readChaosLog(t, r.plan.Log)
			checkChaosLog(t, lines, sections)
			for _, o := range r.finished {
				if o.err != nil {
					t.Errorf("peer %d: %v", o.pid, o.err)
				}
				if got := countPID(lines, o.pid); got != o.res.Done {
					t.Errorf("peer %d reports %d critical sections; the log has %d of its lines", o.pid, o.res.Done, got)
				}
			}
			// Every peer, killed later or not, wrote its overlaps down.
			overlaps := readLines(t, r.plan.Overlaps)
			for i, e := range overlaps {
				if i == 5 {
					t.Errorf("... %d overlaps in all", len(overlaps))
					break
				}
				t.Errorf("overlap: %s", e)
			}
			// Every kill struck inside a critical section, so it left a
			// marker, which the next entrant took over; nobody else's
			// marker was ever taken for a dead one's.
			takeovers := checkTakeovers(t, r.plan.Takeovers, r.kills)
			inside := 0
			for _, k := range r.kills {
				if k.inside {
					inside++
				}
			}
			leftovers := chaosLeftovers(t, r.plan.Lock)
			if len(r.kills) == 0 {
				t.Fatal("no holder was killed: the run tested nothing of crashes")
			}
			delays := reacquireDelays(t, r.kills, lines, sections)
			if len(delays) == 0 {
				t.Fatal("no kill was followed by a critical section")
			}
			logSlowest(t, r, lines)
			slices.Sort(delays)
			median, worst := delays[len(delays)/2], delays[len(delays)-1]
			if worst > chaosReacquireBound {
				t.Errorf("a kill was followed by the next critical section only after %v; want within %v", worst, chaosReacquireBound)
			}
			p99 := delays[min(len(delays)-1, len(delays)*99/100)]
			longest := delays[max(0, len(delays)-5):]
			for i := range longest {
				longest[i] = longest[i].Round(100 * time.Microsecond)
			}
			t.Logf("%s: %d critical sections in %v; %d processes killed (%d inside their section), %d markers taken over, %d overlaps, %d wedges (longest idle with nobody inside: %v); kill-to-reacquire over %d kills: median %v, p99 %v, max %v (the longest: %v); %d leftovers of killed writers at the end",
				mech, len(lines), took.Round(time.Millisecond), len(r.kills), inside, takeovers, len(overlaps), r.stalls, r.idle.Round(time.Millisecond), len(delays), median.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), worst.Round(10*time.Microsecond), longest, leftovers)
		})
	}
}

// mechsName names a set of mechanisms, for subtests: "sqlite", "file", or
// "sqlite+file" for peers of both on one lock.
func mechsName(mechs []proclock.Mechanism) string {
	names := make([]string, len(mechs))
	for i, m := range mechs {
		names[i] = string(m)
	}
	return strings.Join(names, "+")
}

// chaosRun is what a chaos run leaves: its plan, the peers that stopped on
// their own, and the kills.
type chaosRun struct {
	plan     peer.ChaosPlan
	finished []chaosOutcome
	kills    []chaosKill
	// stalls counts the wedges seen (chaosStall), idle the longest time
	// without a section while nobody was inside.
	stalls int
	idle   time.Duration
}

type chaosOutcome struct {
	pid int
	res peer.ChaosResult
	err error
}

type chaosKill struct {
	pid    int
	at     time.Time
	inside bool // inside its critical section (it left a marker)
}

// runChaos runs chaosPeers peers on one lock and kills one inside its
// critical section every 20–80 ms, replacing it, until the peers stop
// because the log has its sections.
func runChaos(t *testing.T, mechs []proclock.Mechanism, sections int, opts proclock.Options) chaosRun {
	dir := t.TempDir()
	r := chaosRun{plan: peer.ChaosPlan{
		Lock:      filepath.Join(dir, "chaos.lock"),
		Marker:    filepath.Join(dir, "occupied"),
		Log:       filepath.Join(dir, "log"),
		Takeovers: filepath.Join(dir, "takeovers"),
		Overlaps:  filepath.Join(dir, "overlaps"),
		Waits:     filepath.Join(dir, "waits"),
		Limit:     sections,
		Hold:      chaosHold,
		Opts:      opts,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outcomes := make(chan chaosOutcome)
	live := map[int]*peer.Native{}
	started := 0
	spawn := func() {
		p := peer.Spawn(t, mechs[started%len(mechs)])
		pid := p.Process().Pid
		live[pid] = p
		started++
		go func() {
			res, err := p.Chaos(ctx, r.plan)
			outcomes <- chaosOutcome{pid, res, err}
		}()
	}
	for range chaosPeers {
		spawn()
	}

	pace := func() time.Duration { return chaosKillMin + rand.N(chaosKillSpread) }
	tick := time.NewTimer(pace())
	defer tick.Stop()
	killed := map[int]bool{}
	stopping := false // once a peer has found the log full, nobody is killed
	wedged := false
	insideOnly := os.Getenv("PROCLOCK_CHAOS_INSIDE") == "1"
	lastSize, lastProgress := int64(-1), time.Now()
	stalled := false // the current idle spell was counted
	for received := 0; received < started; {
		select {
		case o := <-outcomes:
			received++
			if killed[o.pid] {
				continue // a killed peer's call only says it is gone
			}
			lastProgress = time.Now()
			delete(live, o.pid)
			r.finished = append(r.finished, o)
			stopping = true
		case <-tick.C:
			if fi, err := os.Stat(r.plan.Log); err == nil && fi.Size() != lastSize {
				lastSize, lastProgress, stalled = fi.Size(), time.Now(), false
			}
			// Inside: a live peer's marker (a killed one's stays until
			// the next holder takes it over, and holds no one out).
			if who, in := insider(r.plan.Marker); (!in || live[who] == nil) && !stopping {
				idle := time.Since(lastProgress)
				r.idle = max(r.idle, idle)
				if idle > chaosStall && !stalled {
					stalled = true
					r.stalls++
					t.Errorf("wedged: no critical section for %v while nobody is inside (%s)", idle.Round(time.Millisecond), describeChaos(r.plan))
				}
			}
			if !wedged && time.Since(lastProgress) > chaosWedge {
				t.Errorf("no critical section completed for %v: the lock is wedged (%s)", chaosWedge, describeChaos(r.plan))
				wedged, stopping = true, true
				cancel()
				for pid, p := range live {
					killed[pid] = true
					p.Kill()
				}
			}
			if !stopping {
				pid, ok := insider(r.plan.Marker)
				if !insideOnly {
					pid, ok = anyLive(live), len(live) > 0
				}
				if ok && live[pid] != nil {
					in := stopInside(t, live[pid], r.plan.Marker, insideOnly)
					if in || !insideOnly {
						p := live[pid]
						delete(live, pid)
						killed[pid] = true
						r.kills = append(r.kills, chaosKill{pid, time.Now(), in})
						p.Process().Kill()
						p.Kill() // reaps it
						spawn()
					}
				}
			}
			tick.Reset(pace())
		}
	}
	return r
}

// insider returns the pid that the marker names: the process inside its
// critical section now, if any.
func insider(marker string) (int, bool) {
	data, err := os.ReadFile(marker)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(f[0])
	return pid, err == nil
}

// anyLive is one of the live peers, at random.
func anyLive(live map[int]*peer.Native) int {
	pids := make([]int, 0, len(live))
	for pid := range live {
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return 0
	}
	return pids[rand.N(len(pids))]
}

// stopInside stops p and reports whether, stopped, it is inside its
// critical section (the marker names it). With insideOnly, a peer that is
// not inside is let go on; else it stays stopped, to be killed.
func stopInside(t *testing.T, p *peer.Native, marker string, insideOnly bool) bool {
	t.Helper()
	pid := p.Process().Pid
	if err := p.Process().Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping pid %d: %v", pid, err)
	}
	// SIGSTOP lands asynchronously; the wait returns once it has (or the
	// peer has died), leaving the child's state for the reaper.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			t.Fatalf("waiting for pid %d to stop: %v", pid, err)
		}
	}
	if who, ok := insider(marker); ok && who == pid {
		return true
	}
	if insideOnly {
		p.Process().Signal(syscall.SIGCONT)
	}
	return false
}

// chaosLeftovers counts, and logs, the temporary and set-aside files left
// beside the lock at the end of a run (lockrec.Sweep removes a killed
// writer's where it next meets a crash; they keep no one out).
func chaosLeftovers(t *testing.T, lock string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(lock))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.Contains(e.Name(), ".new-") || strings.Contains(e.Name(), ".stale-") {
			n++
		}
	}
	return n
}

// describeChaos says what is at a wedged run's lock, for the failure.
func describeChaos(plan peer.ChaosPlan) string {
	var b strings.Builder
	for _, name := range []string{plan.Lock, plan.Lock + ".holder", plan.Marker} {
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v; ", filepath.Base(name), err)
			continue
		}
		if len(data) > 120 {
			data = append(data[:120:120], "..."...)
		}
		fmt.Fprintf(&b, "%s: %q; ", filepath.Base(name), data)
	}
	return b.String()
}

// chaosLine is one line of the log: the section's number, its holder, and
// when it wrote the line.
type chaosLine struct {
	n, pid int
	at     time.Time
}

func readChaosLog(t *testing.T, name string) []chaosLine {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var lines []chaosLine
	for i, text := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(text) == 0 {
			continue
		}
		var l chaosLine
		var nanos int64
		if _, err := fmt.Sscanf(string(text), "%d %d %d\n", &l.n, &l.pid, &nanos); err != nil {
			t.Fatalf("log line %d %q: %v", i+1, text, err)
		}
		l.at = time.Unix(0, nanos)
		lines = append(lines, l)
	}
	return lines
}

// checkChaosLog checks that line k says k, for every k: a duplicate is two
// holders (or a lost update), a gap a torn one.
func checkChaosLog(t *testing.T, lines []chaosLine, want int) {
	t.Helper()
	bad := 0
	for k, l := range lines {
		if l.n != k+1 {
			if bad++; bad <= 5 {
				t.Errorf("log line %d says %d (written by pid %d at %v)", k+1, l.n, l.pid, l.at.Format(time.StampMicro))
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d log lines out of place in all", bad)
	}
	if len(lines) != want {
		t.Errorf("the log has %d lines; want %d critical sections", len(lines), want)
	}
}

// checkTakeovers checks that the takeovers file names each killed pid
// once, and no other, and returns how many lines it has.
func checkTakeovers(t *testing.T, name string, kills []chaosKill) int {
	t.Helper()
	lines := readLines(t, name)
	taken := map[int]int{}
	for _, l := range lines {
		pid, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("takeovers: %q: %v", l, err)
		}
		taken[pid]++
	}
	for _, k := range kills {
		if !k.inside {
			// Killed outside its section: no marker of its own, unless
			// (stopped just after linking it) the marker names it, which
			// stopInside would have seen.
			if taken[k.pid] != 0 {
				t.Errorf("pid %d was killed outside its critical section; its marker was taken over %d times, want 0", k.pid, taken[k.pid])
			}
			delete(taken, k.pid)
			continue
		}
		if taken[k.pid] != 1 {
			t.Errorf("pid %d was killed inside its critical section; its marker was taken over %d times, want 1", k.pid, taken[k.pid])
		}
		delete(taken, k.pid)
	}
	for pid, n := range taken {
		t.Errorf("the marker of pid %d, which was not killed, was taken over %d times", pid, n)
	}
	return len(lines)
}

// readLines returns the lines of the file name; none when it is missing.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func countPID(lines []chaosLine, pid int) int {
	n := 0
	for _, l := range lines {
		if l.pid == pid {
			n++
		}
	}
	return n
}

// reacquireDelays returns, for every kill, how long until another process
// wrote the next line. A kill with no line after it is fine only when the
// log was already full.
func reacquireDelays(t *testing.T, kills []chaosKill, lines []chaosLine, want int) []time.Duration {
	t.Helper()
	var delays []time.Duration
	for _, k := range kills {
		i := slices.IndexFunc(lines, func(l chaosLine) bool { return l.pid != k.pid && l.at.After(k.at) })
		if i < 0 {
			if len(lines) < want {
				t.Errorf("pid %d killed at %v: the lock was never taken again", k.pid, k.at.Format(time.StampMicro))
			}
			continue
		}
		delays = append(delays, lines[i].at.Sub(k.at))
	}
	return delays
}

// logSlowest logs, for the kills followed by the five longest
// kill-to-reacquire, the waits the next holder made while it acquired
// (ChaosPlan.Waits: written for acquisitions of 10 ms or more): whether
// its last wait ran out its time or was woken, and when.
func logSlowest(t *testing.T, r chaosRun, lines []chaosLine) {
	t.Helper()
	waits := map[string]string{} // "<pid> <entered>": the waits
	for _, l := range readLines(t, r.plan.Waits) {
		if f := strings.SplitN(l, " ", 3); len(f) == 3 {
			waits[f[0]+" "+f[1]] = f[2]
		}
	}
	type slow struct {
		delay  time.Duration
		next   chaosLine
		inside bool
	}
	var all []slow
	for _, k := range r.kills {
		i := slices.IndexFunc(lines, func(l chaosLine) bool { return l.pid != k.pid && l.at.After(k.at) })
		if i >= 0 {
			all = append(all, slow{lines[i].at.Sub(k.at), lines[i], k.inside})
		}
	}
	slices.SortFunc(all, func(a, b slow) int { return int(b.delay - a.delay) })
	for _, s := range all[:min(5, len(all))] {
		w, ok := waits[fmt.Sprintf("%d %d", s.next.pid, s.next.at.UnixNano())]
		if !ok {
			w = "(its acquisition took under 10 ms: the time went before it began)"
		}
		t.Logf("  kill-to-reacquire %v (killed inside: %v): pid %d's acquisition: %s", s.delay.Round(10*time.Microsecond), s.inside, s.next.pid, w)
	}
}
