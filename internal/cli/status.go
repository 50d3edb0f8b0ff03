package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

const statusUsage = `Usage: proclock status [--json] [--mechanism auto|sqlite|file] PATH

Tells whether the lock at PATH is free or held, and by whom, without taking
it and without writing anything. The answer may be out of date as soon as it
is printed: only taking the lock decides.

Options:
  --json         print the status as one JSON object (below)
  --mechanism M  auto (the default: sqlite where this system has it, else
                 file), sqlite, or file; either reads a lock held by the
                 other
  -V, --version  print the version
  -h, --help     print this help

States:
  absent        nothing at PATH, in a directory that exists: free
  free          the lock's file exists and nobody holds it
  stale         a lock file whose holder is gone (pid gone, pid reused,
                other boot, unstamped or unreadable for over 30 s): free to
                take; the next taker removes it
  held          someone holds it: pid, host, process start, when it took
                the lock, for how long, mechanism; or an unknown holder,
                such as flock(1)'s (a flock(2) lock)
  inaccessible  this user may not read the lock's file
  foreign       the file at PATH is not a lock file (a script, text, a
                database with tables, a FIFO, ...): no lock can be taken
                there, and proclock never changes it

Errors, one line on stderr ("proclock: inspect PATH: CAUSE"), the same
that proclock run gives for PATH: is a directory, no such directory, a
part of the path is not a directory, name too long, on a network
filesystem.

`

// statusTail ends status's help, after its exit codes (statusExits).
const statusTail = `JSON (format 1; fields may be added, and formatVersion changes only if
one is renamed, removed or changes meaning; times are RFC 3339 in UTC):
  formatVersion   1
  path            PATH as given
  state           "absent", "free", "held", "stale", "inaccessible" or
                  "foreign"
  reason          why stale ("pid gone", "pid reused", "other boot",
                  "unstamped past 30 s", "unreadable past 30 s"),
                  inaccessible ("permission denied"), foreign ("not a
                  lock file: ..."), what is known of an unknown holder
                  ("a flock(2) lock"), or why a holder that is gone
                  still holds ("its pid is gone: the kernel's locks hold
                  it for a process that inherited its descriptor");
                  omitted otherwise. Beside stale's,
                  reasons are the words status prints, for people: tools
                  go by state
  holder          who holds it, or held it last when stale; omitted when
                  unknown. An object:
    host          host name
    bootId        the boot of the host; omitted when unknown
    pid           process id
    processStart  when the process started (RFC 3339); omitted when it
                  cannot be told: another host or boot, or an OS that
                  records none
    startTime     the same, raw, in the units of the OS that recorded it
                  (linux clock ticks since boot, darwin microseconds since
                  1970, the BSDs microseconds since boot, windows 100 ns
                  since 1601); omitted when unknown
    pidNamespace  linux pid namespace inode; omitted when unknown
    timeNamespace linux time namespace inode; omitted when unknown
    bootOffset    how far that time namespace's boot clock is set from
                  the host's, in nanoseconds (startTime is on the host's
                  clock); omitted when 0
    otherPidNamespace   true when the holder, of this host, is in another
                  pid namespace than status (its pid means another
                  process here); omitted otherwise
    otherTimeNamespace  true when it is in another time namespace than
                  status; omitted otherwise
    launcherPid   PROCLOCK_LAUNCHER_PID of the holder; omitted when none
  acquiredAt      when the holder took the lock; omitted when unknown
  heldForSeconds  seconds since acquiredAt, while held (a number with a
                  fraction); omitted otherwise
  mechanism       "sqlite" or "file"

Examples:
  proclock status /run/backup/backup.lock
  #  /run/backup/backup.lock: held by pid 4242 on buildhost
  #    process started 2026-03-01T09:00:00+01:00, acquired at 2026-03-01T09:00:01+01:00, held for 3m12s, mechanism sqlite

  proclock status --json /run/backup/backup.lock | jq .holder.pid

  # In a script; the answer can change at once: only proclock run decides.
  if proclock status /run/backup/backup.lock >/dev/null; then echo "no backup running"; fi
`

// statusOptions are the parsed arguments of proclock status.
type statusOptions struct {
	json      bool
	mechanism string
	path      string
	hostOnly  []string // as runOptions.hostOnly
}

// parseStatusArgs reads proclock status's options and operand. It returns
// errHelp or errVersion when -h or -V asked for that instead.
func parseStatusArgs(args []string) (statusOptions, error) { return parseStatusArgsWith(args, nil) }

// parseStatusArgsWith is parseStatusArgs with the backends' options.
func parseStatusArgsWith(args []string, extra []option) (statusOptions, error) {
	o := statusOptions{mechanism: "auto"}
	rest, err := parseOptions("status", append(statusOptionTable(&o), append(extra, helpOptions...)...), args)
	switch {
	case err != nil:
		return o, err
	case len(rest) == 0:
		return o, usagef("status", "missing PATH")
	case len(rest) > 1:
		return o, usagef("status", "one PATH only, got %d arguments", len(rest))
	case rest[0] == "":
		return o, usagef("status", "empty PATH")
	}
	o.path = rest[0]
	return o, nil
}

// statusOptionTable defines proclock status's own options.
func statusOptionTable(o *statusOptions) []option {
	return []option{
		{names: []string{"--json"}, set: func(string) error {
			o.json = true
			return nil
		}},
		givenOption(&o.hostOnly, mechanismOption(&o.mechanism)),
	}
}

// statusMain is proclock status: it reports on the lock, of this host or
// of a backend, writing nothing.
func statusMain(args []string, std streams) int {
	var x runExtra
	o, err := parseStatusArgsWith(args, x.backendOptions(std.backends))
	if err == nil {
		err = x.refuse("status", o.path, o.hostOnly, std.backends)
	}
	if code, done := parsed(err, statusHelp(std.backends), std); done {
		return code
	}
	t, err := openTarget(std.backends, o.path, o.mechanism, proclock.Options{})
	if err != nil {
		complain(std.err, err)
		return failureCode(err)
	}
	defer t.Close()
	rep, err := t.Inspect(context.Background())
	if err != nil {
		complain(std.err, noted(err, pathNote(o.path, err)))
		return failureCode(err)
	}
	explainState(t, &rep)
	if o.json {
		// One object on one line: easy for jq and for line-based tools.
		if err := json.NewEncoder(std.out).Encode(reportRecord(rep, startedAt)); err != nil {
			complain(std.err, err)
			return exitUsage
		}
	} else {
		fmt.Fprint(std.out, describeReport(rep))
	}
	return codeForState(rep.State)
}

// explainState says why a lock is in its state, where status knows more
// than Inspect: a foreign PATH that is a symlink, a held lock whose
// holder of this host is dead (a host lock's kernel locks kept by its
// job; a cluster lock's lease not renewed), a cluster lock's holder that
// lets its lease run down.
func explainState(t Target, rep *Report) {
	if note := symlinkNote(rep.Path); rep.State == proclock.StateForeign && note != "" && rep.Reason != "" {
		rep.Reason += " (" + note + ")" // as run says it
	}
	gone := holderGone(rep.Status)
	if _, host := t.(*hostTarget); rep.Reason == "" && gone {
		rep.Reason = goneHolderReason
		if host {
			rep.Reason = inheritedReason
		}
	}
	if c := rep.Cluster; c != nil && rep.State == proclock.StateHeld && (gone || notRenewing(c)) {
		c.NotRenewing = true
		if rep.Reason == "" {
			rep.Reason = notRenewingReason
		}
	}
}

// inheritedReason is what status says of a lock held while its recorded
// holder is dead: the kernel's locks, which only a process holding the
// lock's open file can keep, hold it (docs/command.md, "The lock and
// COMMAND's processes").
const inheritedReason = "its pid is gone: the kernel's locks hold it for a process that inherited its descriptor (the job of a killed proclock run)"

// holderGone reports whether st is held by a holder of this host that is
// dead: the lock is held only because someone else keeps its kernel
// locks.
func holderGone(st proclock.Status) bool {
	p := platform.Native()
	if st.State != proclock.StateHeld || st.Holder == nil || p.Process == nil {
		return false
	}
	self, err := p.Process.Self()
	if err != nil {
		return false
	}
	return platform.Judge(self, *st.Holder, p.Process.Lookup).Verdict == platform.Dead
}

// statusFormat is the version of status --json's format: it changes only
// if a field is renamed, removed or changes its meaning, never when one is
// added.
const statusFormat = 1

// jsonStatus is what status --json prints (docs/command.md, "status
// --json").
type jsonStatus struct {
	FormatVersion  int         `json:"formatVersion"`
	Path           string      `json:"path"`
	State          string      `json:"state"`
	Reason         string      `json:"reason,omitempty"`
	Holder         *jsonHolder `json:"holder,omitempty"`
	AcquiredAt     string      `json:"acquiredAt,omitempty"`
	HeldForSeconds *float64    `json:"heldForSeconds,omitempty"`
	Mechanism      string      `json:"mechanism"`
}

// jsonHolder is the holder's identity in status --json: the recorded
// identity as it is, and when its process started as a time.
type jsonHolder struct {
	Host         string `json:"host"`
	BootID       string `json:"bootId,omitempty"`
	PID          int    `json:"pid"`
	ProcessStart string `json:"processStart,omitempty"`
	StartTime    uint64 `json:"startTime,omitempty"`
	PIDNamespace uint64 `json:"pidNamespace,omitempty"`
	// TimeNamespace, BootOffset: the holder's time namespace, and how
	// far its boot clock is set from the host's.
	TimeNamespace uint64 `json:"timeNamespace,omitempty"`
	BootOffset    int64  `json:"bootOffset,omitempty"`
	// OtherPIDNamespace, OtherTimeNamespace: Status's, of the holder.
	OtherPIDNamespace  bool `json:"otherPidNamespace,omitempty"`
	OtherTimeNamespace bool `json:"otherTimeNamespace,omitempty"`
	LauncherPID        int  `json:"launcherPid,omitempty"`
}

// statusRecord is st as status --json prints it; started tells when a
// holder's process started, when it can.
func statusRecord(st proclock.Status, started func(platform.Identity) (time.Time, bool)) jsonStatus {
	r := jsonStatus{
		FormatVersion: statusFormat,
		Path:          st.Path,
		State:         string(st.State),
		Reason:        st.Reason,
		Mechanism:     string(st.Mechanism),
	}
	if id := st.Holder; id != nil {
		r.Holder = &jsonHolder{Host: id.Host, BootID: id.BootID, PID: id.PID, StartTime: id.StartTime,
			PIDNamespace: id.PIDNamespace, TimeNamespace: id.TimeNamespace, BootOffset: id.BootOffset,
			OtherPIDNamespace: st.OtherPIDNamespace, OtherTimeNamespace: st.OtherTimeNamespace,
			LauncherPID: id.LauncherPID}
		if at, ok := started(*id); ok {
			r.Holder.ProcessStart = rfc3339(at)
		}
	}
	if !st.AcquiredAt.IsZero() {
		r.AcquiredAt = rfc3339(st.AcquiredAt)
		if st.State == proclock.StateHeld {
			secs := st.HeldFor.Seconds()
			r.HeldForSeconds = &secs
		}
	}
	return r
}

// rfc3339 formats a time for tools: UTC, to the nanosecond it has.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// codeForState is status's exit code for a state: a stale lock is free to
// take, an unreadable one cannot be judged.
func codeForState(s proclock.State) int {
	switch s {
	case proclock.StateAbsent, proclock.StateFree, proclock.StateStale:
		return exitOK
	case proclock.StateHeld:
		return exitHeld
	}
	return exitUsage
}

// describeStatus words a status for people, in one or two lines.
func describeStatus(st proclock.Status) string {
	mech := "mechanism " + string(st.Mechanism)
	switch st.State {
	case proclock.StateAbsent:
		return sprintf("%s: free (no lock file; %s)\n", st.Path, mech)
	case proclock.StateFree:
		return sprintf("%s: free (%s)\n", st.Path, mech)
	case proclock.StateStale:
		line := sprintf("%s: stale, free to take: %s\n", st.Path, st.Reason)
		if st.Holder == nil {
			return line + "  " + mech + "\n"
		}
		return line + sprintf("  last held by %s\n", joinFacts(holderFacts(st)))
	case proclock.StateHeld:
		facts := holderFacts(st)
		return sprintf("%s: held by %s\n  %s\n", st.Path, facts[0], joinFacts(facts[1:])) + unjudgedNote(st)
	case proclock.StateForeign:
		if st.Reason != "" { // it may name a sidecar: a user's file at the mark's name
			return sprintf("%s: %s\n", st.Path, st.Reason)
		}
		return sprintf("%s: not a lock file: proclock never changes it; lock another path\n", st.Path)
	}
	return sprintf("%s: %s: %s (%s)\n", st.Path, st.State, st.Reason, mech)
}

// unjudgedNote is how to clear a lock file whose holder no process here
// can judge: stamped in another pid namespace, it stays held after its
// holder died, as nothing of the lock is the kernel's (docs/protocol.md,
// "Limits"). "" for any other lock.
func unjudgedNote(st proclock.Status) string {
	if !st.OtherPIDNamespace || st.Mechanism != proclock.MechanismFile {
		return ""
	}
	return sprintf("  its pid is of another pid namespace: no process here can tell whether it lives, and if it died the lock stays held until someone removes the file; once sure it is gone (its container ended), rm %s\n", st.Path)
}

// holderFacts lists what is known of a lock's holder: who it is first,
// then its process start, when it took the lock, for how long, and the
// mechanism.
func holderFacts(st proclock.Status) []string {
	who := "an unknown holder (no identity recorded)"
	if st.Holder == nil && st.State == proclock.StateHeld && st.Reason != "" {
		who = "an unknown holder (" + st.Reason + ")"
	}
	var facts []string
	if st.Holder != nil {
		who = st.Holder.String() + namespaceNote(st)
		if started, ok := startedAt(*st.Holder); ok {
			facts = append(facts, "process started "+stamp(started))
		}
	}
	if !st.AcquiredAt.IsZero() {
		facts = append(facts, "acquired at "+stamp(st.AcquiredAt))
		if st.State == proclock.StateHeld {
			facts = append(facts, "held for "+roughly(st.HeldFor))
		}
	}
	facts = append(facts, "mechanism "+string(st.Mechanism))
	if st.Holder != nil && st.State == proclock.StateHeld && st.Reason != "" {
		// A lock held by its mark alone, its file removed.
		facts = append(facts, st.Reason)
	}
	return append([]string{who}, facts...)
}

// namespaceNote says, after the holder's name, which of its namespaces
// are not status's: its pid is then another namespace's, or its clocks
// are set off the host's.
func namespaceNote(st proclock.Status) string {
	var notes []string
	if st.OtherPIDNamespace {
		notes = append(notes, "in another pid namespace")
	}
	if st.OtherTimeNamespace {
		notes = append(notes, "in another time namespace")
		if off := time.Duration(st.Holder.BootOffset); off > 0 {
			notes[len(notes)-1] += ", boot clock " + off.String() + " ahead"
		} else if off < 0 {
			notes[len(notes)-1] += ", boot clock " + (-off).String() + " behind"
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// joinFacts joins holderFacts into one clause.
func joinFacts(facts []string) string { return strings.Join(facts, ", ") }

// stamp formats a time for people, in local time to the second.
func stamp(t time.Time) string { return t.Local().Format(time.RFC3339) }

// roughly rounds a duration to what a person wants to read.
func roughly(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// startedAt is when the holder's process started, by this machine's clock,
// when it can tell: the recorded start time is in the units of the OS that
// recorded it, so only a holder of this host and boot can be read.
func startedAt(id platform.Identity) (time.Time, bool) {
	self, err := platform.Native().Process.Self()
	if err != nil || id.StartTime == 0 || id.Host != self.Host || id.BootID != self.BootID {
		return time.Time{}, false
	}
	// The start time is on the host's clock; the boot time status reads
	// is its own time namespace's, set back by its boot-time offset.
	at, ok := startTimeOnClock(id.StartTime)
	return at.Add(time.Duration(self.BootOffset)), ok
}
