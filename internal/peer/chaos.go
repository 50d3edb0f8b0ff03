package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// ChaosPlan is a loop of acquisitions that runs in a native peer until the
// log is full, the request is cancelled, or the peer is killed: the test
// around it kills holders at random and starts new peers in their place.
//
// Each critical section is checked two ways that a crash cannot spoil:
//   - an occupancy marker, hard-linked into place (so it appears at once
//     with its content, as an O_EXCL create would, but never empty) holding
//     the entrant's pid and start time. An entrant that finds the marker of
//     a process that has died takes it over; one that finds a live
//     process's marker counts an overlap.
//   - a log, whose only write per section is one O_APPEND line
//     "<n> <pid> <unixnano>\n" with n one more than the lines already
//     there and the time the section began: a lost update or a second
//     holder leaves a duplicate or a gap.
type ChaosPlan struct {
	Lock   string `json:"lock"`
	Marker string `json:"marker"`
	Log    string `json:"log"`
	// Takeovers, when set, gets one line "<pid>\n" for every dead
	// holder's marker taken over, written before the marker is touched,
	// so that a kill of the entrant (once its own marker is in place)
	// cannot lose it.
	Takeovers string `json:"takeovers,omitempty"`
	// Overlaps, when set, gets one line for every overlap, at once: a
	// peer killed later reports nothing else.
	Overlaps string `json:"overlaps,omitempty"`
	// Limit is how many lines the log gets: a peer that finds it full
	// leaves its critical section without writing, and stops.
	Limit int `json:"limit"`
	// Hold bounds the work of a critical section: each holds the lock
	// for a random time below it, so that a kill often finds a holder
	// inside, and a second holder would read the same count as the first.
	Hold time.Duration    `json:"hold"`
	Opts proclock.Options `json:"opts"`
	// Waits, when set, gets one line for every acquisition that took
	// 10 ms or more, with the wake-up waits it made (waitRecorder).
	Waits string `json:"waits,omitempty"`
}

// ChaosResult is what one peer of a chaos run saw, reported when it stops
// (a killed peer reports nothing).
type ChaosResult struct {
	// Done counts the log lines the peer wrote.
	Done int `json:"done"`
	// Overlaps counts entries that found a live process's marker;
	// Evidence describes the first few.
	Overlaps int      `json:"overlaps"`
	Evidence []string `json:"evidence,omitempty"`
	// Takeovers counts entries that found a dead process's marker.
	Takeovers int `json:"takeovers"`
}

// Chaos runs plan in the peer until the log is full or ctx is done, and
// returns what the peer saw; ctx ending is a normal stop, not an error.
func (p *Native) Chaos(ctx context.Context, plan ChaosPlan) (ChaosResult, error) {
	r := p.call(ctx, request{Op: "chaos", Chaos: &plan})
	if r.Chaos == nil {
		return ChaosResult{}, r.Err.toError()
	}
	return *r.Chaos, r.Err.toError()
}

// chaos is the peer's side of a chaos run.
func chaos(ctx context.Context, p *platform.Platform, plan ChaosPlan) (ChaosResult, error) {
	var res ChaosResult
	me, err := selfMarker()
	if err != nil {
		return res, err
	}
	m, err := newChaosMember(plan, me)
	if err != nil {
		return res, err
	}
	defer m.close()
	plan.Opts.Wait = true
	p, rec := recordWaits(p, plan.Waits)
	for {
		rec.start()
		l, err := proclock.Acquire(ctx, p, plan.Lock, plan.Opts)
		if err != nil {
			if ctx.Err() != nil {
				return res, nil // told to stop
			}
			return res, err
		}
		more, err := m.criticalSection(&res, rec)
		if rerr := l.Release(); err == nil {
			err = rerr
		}
		if err != nil || !more {
			return res, err
		}
	}
}

// markerID is who a marker says is inside: a pid, and that process's start
// time, so that a reused pid is not taken for the holder that died.
type markerID struct {
	pid   int
	start uint64
}

func (id markerID) String() string { return fmt.Sprintf("%d %d\n", id.pid, id.start) }

func parseMarker(b []byte) (markerID, error) {
	f := bytes.Fields(b)
	if len(f) != 2 {
		return markerID{}, fmt.Errorf("marker %q: want \"<pid> <start>\"", b)
	}
	pid, err := strconv.Atoi(string(f[0]))
	if err != nil {
		return markerID{}, fmt.Errorf("marker %q: %w", b, err)
	}
	start, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return markerID{}, fmt.Errorf("marker %q: %w", b, err)
	}
	return markerID{pid, start}, nil
}

// chaosMember is one peer's part in a chaos run: its own copy of the marker
// (linked to the marker's name on entry) and the log, open for appending.
type chaosMember struct {
	plan ChaosPlan
	me   markerID
	mine string // this peer's marker, linked into place on entry
	log  *os.File
}

func newChaosMember(plan ChaosPlan, me markerID) (*chaosMember, error) {
	mine := plan.Marker + ".pid" + strconv.Itoa(me.pid)
	if err := os.WriteFile(mine, []byte(me.String()), 0o644); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(plan.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		os.Remove(mine)
		return nil, err
	}
	return &chaosMember{plan: plan, me: me, mine: mine, log: log}, nil
}

func (m *chaosMember) close() {
	m.log.Close()
	os.Remove(m.mine)
}

// criticalSection runs one section while the lock is held: mark, count the
// log's lines, work, append the next line, unmark. It reports whether the
// log wants more lines.
func (m *chaosMember) criticalSection(res *ChaosResult, rec *waitRecorder) (more bool, err error) {
	entered := time.Now() // the lock's been taken: what kill-to-reacquire measures
	rec.done(entered)
	marked, err := m.enter(res)
	if err != nil {
		return false, err
	}
	if marked {
		defer func() {
			if rerr := os.Remove(m.plan.Marker); err == nil {
				err = rerr
			}
		}()
	}
	data, err := os.ReadFile(m.plan.Log)
	if err != nil {
		return false, err
	}
	n := bytes.Count(data, []byte{'\n'})
	if n >= m.plan.Limit {
		return false, nil
	}
	if m.plan.Hold > 0 {
		// The section's work, not a wait for anything.
		work := time.NewTimer(rand.N(m.plan.Hold))
		<-work.C
	}
	line := fmt.Sprintf("%d %d %d\n", n+1, m.me.pid, entered.UnixNano())
	if _, err := m.log.WriteString(line); err != nil {
		return false, err
	}
	res.Done++
	return true, nil
}

// enter puts this peer's marker in place. A marker already there is a dead
// holder's (taken over) or a live one's (an overlap, recorded in res; the
// section goes on without a marker of its own).
func (m *chaosMember) enter(res *ChaosResult) (marked bool, err error) {
	err = os.Link(m.mine, m.plan.Marker)
	if !errors.Is(err, fs.ErrExist) {
		return err == nil, err
	}
	data, err := os.ReadFile(m.plan.Marker)
	if errors.Is(err, fs.ErrNotExist) {
		// Its owner was inside a moment ago and has left: an overlap.
		return false, m.overlap(res, "a marker that was removed while this holder entered")
	}
	if err != nil {
		return false, err
	}
	owner, err := parseMarker(data)
	if err != nil {
		return false, err
	}
	gone, err := markerOwnerGone(owner)
	if err != nil {
		return false, err
	}
	if !gone || owner == m.me {
		return false, m.overlap(res, fmt.Sprintf("the marker of pid %d (start %d), which is alive", owner.pid, owner.start))
	}
	res.Takeovers++
	if err := m.recordTakeover(owner); err != nil {
		return false, err
	}
	if err := os.Remove(m.plan.Marker); err != nil {
		return false, err
	}
	if err := os.Link(m.mine, m.plan.Marker); errors.Is(err, fs.ErrExist) {
		return false, m.overlap(res, "a marker put back while a dead holder's was taken over")
	} else if err != nil {
		return false, err
	}
	return true, nil
}

// recordTakeover appends the dead owner's pid to the plan's takeovers file.
func (m *chaosMember) recordTakeover(owner markerID) error {
	return appendLine(m.plan.Takeovers, strconv.Itoa(owner.pid))
}

// appendLine appends line and a newline to the file name, if named, in
// one write.
func appendLine(name, line string) error {
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// maxEvidence bounds the overlaps described in a result.
const maxEvidence = 5

func (m *chaosMember) overlap(res *ChaosResult, what string) error {
	res.Overlaps++
	e := fmt.Sprintf("pid %d at %d found %s", m.me.pid, time.Now().UnixNano(), what)
	if len(res.Evidence) < maxEvidence {
		res.Evidence = append(res.Evidence, e)
	}
	return appendLine(m.plan.Overlaps, e)
}
