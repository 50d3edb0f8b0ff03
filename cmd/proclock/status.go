package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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

Exit status: 0 free (absent, free or stale), 1 held, 2 inaccessible,
foreign or an error.

JSON fields (stable: fields may be added, never renamed or removed):
  path        PATH as given
  state       "absent", "free", "held", "stale", "inaccessible" or
              "foreign"
  reason      why stale ("pid gone", "pid reused", "other boot",
              "unstamped past 30 s", "unreadable past 30 s") or
              inaccessible; omitted otherwise
  holder      who holds it, or held it last when stale; omitted when
              unknown. An object: host, pid, and when known bootId,
              startTime (in the units of the OS that recorded it: linux
              clock ticks since boot, darwin microseconds since 1970, the
              BSDs microseconds since boot, windows 100 ns since 1601),
              pidNamespace, launcherPid
  acquiredAt  when the holder took the lock (RFC 3339); omitted when
              unknown
  heldFor     nanoseconds since acquiredAt; omitted when unknown
  mechanism   "sqlite" or "file"

Examples:
  proclock status /tmp/backup.lock
  #  /tmp/backup.lock: held by pid 4242 on buildhost
  #    process started 2026-03-01T09:00:00+01:00, acquired at 2026-03-01T09:00:01+01:00, held for 3m12s, mechanism sqlite

  proclock status --json /tmp/backup.lock | jq .holder.pid

  # In a script; the answer can change at once: only proclock run decides.
  if proclock status /tmp/backup.lock >/dev/null; then echo "no backup running"; fi
`

// statusOptions are the parsed arguments of proclock status.
type statusOptions struct {
	json      bool
	mechanism string
	path      string
}

// parseStatusArgs reads proclock status's flags and operand. It returns
// flag.ErrHelp when help was asked for.
func parseStatusArgs(args []string) (statusOptions, error) {
	o := statusOptions{mechanism: "auto"}
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.BoolVar(&o.json, "json", false, "")
	mechanismFlag(fs, &o.mechanism)
	if err := parseFlags(fs, "status", args); err != nil {
		return o, err
	}
	switch rest := fs.Args(); {
	case len(rest) == 0:
		return o, usagef("status", "missing PATH")
	case len(rest) > 1:
		return o, usagef("status", "one PATH only, got %d arguments", len(rest))
	case rest[0] == "":
		return o, usagef("status", "empty PATH")
	default:
		o.path = rest[0]
	}
	return o, nil
}

// statusMain is proclock status: it reports on the lock, writing nothing.
func statusMain(args []string, std streams) int {
	o, err := parseStatusArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(std.out, statusUsage)
		return exitOK
	}
	var p *platform.Platform
	if err == nil {
		p, err = platformFor(o.mechanism)
	}
	if err != nil {
		complain(std.err, err)
		return exitUsage
	}
	st, err := proclock.Inspect(context.Background(), p, o.path)
	if err != nil {
		complain(std.err, err)
		return exitUsage
	}
	if o.json {
		// One object on one line: easy for jq and for line-based tools.
		if err := json.NewEncoder(std.out).Encode(st); err != nil {
			complain(std.err, err)
			return exitUsage
		}
	} else {
		fmt.Fprint(std.out, describeStatus(st))
	}
	return codeForState(st.State)
}

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
		return fmt.Sprintf("%s: free (no lock file; %s)\n", st.Path, mech)
	case proclock.StateFree:
		return fmt.Sprintf("%s: free (%s)\n", st.Path, mech)
	case proclock.StateStale:
		line := fmt.Sprintf("%s: stale, free to take: %s\n", st.Path, st.Reason)
		if st.Holder == nil {
			return line + "  " + mech + "\n"
		}
		return line + "  last held by " + joinFacts(holderFacts(st)) + "\n"
	case proclock.StateHeld:
		facts := holderFacts(st)
		return fmt.Sprintf("%s: held by %s\n  %s\n", st.Path, facts[0], joinFacts(facts[1:]))
	case proclock.StateForeign:
		return fmt.Sprintf("%s: not a lock file: proclock never changes it; lock another path\n", st.Path)
	}
	return fmt.Sprintf("%s: %s: %s (%s)\n", st.Path, st.State, st.Reason, mech)
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
		who = st.Holder.String()
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
	return append([]string{who}, facts...)
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
	return startTimeOnClock(id.StartTime)
}
