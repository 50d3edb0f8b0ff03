package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/proclock/proclock"
)

// runExtra are proclock run's options beyond runOptions: the grace of
// the stop on loss, and the options of the backends, noted when given so
// that a host PATH refuses them.
type runExtra struct {
	grace    time.Duration // as asked, when graceSet (0: SIGKILL at once)
	graceSet bool
	foreign  []string // backend options given
}

// options are the parser's entries for x: --grace and the backends'
// options.
func (x *runExtra) options(backends []Backend) []option {
	return append([]option{graceOption(x)}, x.backendOptions(backends)...)
}

// graceOption is --grace, stored in x.
func graceOption(x *runExtra) option {
	return option{names: []string{"--grace"}, value: "DURATION", set: func(s string) error {
		d, err := parseWait(s)
		x.grace, x.graceSet = d, err == nil
		return err
	}}
}

// backendOptions are the backends' options as the parser takes them,
// noted in x when given.
func (x *runExtra) backendOptions(backends []Backend) []option {
	var opts []option
	for _, b := range backends {
		for _, f := range b.Flags() {
			opts = append(opts, givenOption(&x.foreign, option{names: f.Names, value: f.Value, set: f.Set}))
		}
	}
	return opts
}

// refuse refuses, as a usage error of sub, the options given that belong
// to another kind of lock than name's: a backend's option on a PATH, an
// option of a lock on this host (hostOnly) on a backend's name.
func (x *runExtra) refuse(sub, name string, hostOnly []string, backends []Backend) error {
	host := claimant(backends, name) == nil
	switch {
	case host && len(x.foreign) > 0:
		return usagef(sub, "%s applies to cluster locks (etcd://...), not to %s", x.foreign[0], name)
	case !host && len(hostOnly) > 0:
		return usagef(sub, "%s applies to locks on this host (a PATH), not to %s", hostOnly[0], name)
	}
	return nil
}

// runMain is proclock run: it holds the lock, of this host or of a
// backend, while COMMAND runs.
func runMain(args []string, std streams) int {
	var x runExtra
	o, err := parseRunArgsWith(args, x.options(std.backends))
	if err == nil {
		err = x.refuse("run", o.path, o.hostOnly, std.backends)
	}
	if code, done := parsed(err, runHelp(std.backends), std); done {
		return code
	}
	cmd, code := commandOf(o, std)
	if cmd == nil {
		return code
	}
	t, err := openTarget(std.backends, o.path, o.mechanism, proclock.Options{RemoveOnRelease: o.remove, AllowNetworkFS: o.allowNetworkFS})
	if err != nil {
		return failure(std.err, err, o)
	}
	defer t.Close()
	grace, err := time.Duration(0), error(nil)
	if !x.graceSet || x.grace > 0 {
		grace, err = t.Grace(x.grace) // 0: the lock's default
	}
	if err != nil {
		complain(std.err, usagef("run", "%v", err))
		return exitUsage
	}
	return runLocked(t, o, cmd, grace, std.err)
}

// runLocked takes t's lock as o says and runs cmd while it holds it
// (holdWhileRunning), with grace for the stop on loss, and returns run's
// exit code.
func runLocked(t Target, o runOptions, cmd *exec.Cmd, grace time.Duration, stderr io.Writer) int {
	sigs := catchRelayed()
	defer signal.Stop(sigs)

	var g *guard
	if !o.noWait {
		g = startGuard(stderr) // its start hides behind the wait
		defer g.dismiss()      // for the returns without COMMAND
	}
	held, sig, err := takeOrSignal(o, sigs, func(ctx context.Context) (Held, error) {
		return take(ctx, t, o, stderr)
	})
	switch {
	case sig != nil:
		dieOf(sig)
		return signalCode(sig)
	case err != nil:
		return notAcquired(stderr, t, o, err)
	}
	if err := held.Err(); err != nil {
		// Lost between the acquisition and COMMAND's start: COMMAND
		// does not start.
		complain(stderr, fmt.Errorf("proclock: lost %s before COMMAND started: %w", o.path, err))
		held.Release()
		return exitLost
	}
	if err := inheritLockUnless(o.close, cmd, held); err != nil {
		held.Release()
		return notAcquired(stderr, t, o, err)
	}
	// Set last: os/exec keeps the last of duplicates, so a nested run's
	// values win over the ones it inherits.
	cmd.Env = append(os.Environ(), held.Env()...)
	if o.noWait {
		// Only now: a -n that finds the lock held has no COMMAND to
		// guard, and its try is too short to hide the guard's start.
		g = startGuard(stderr)
	}
	return holdWhileRunning(cmd, sigs, stderr, o.path, held, grace, g)
}

// notAcquired tells why run did not take the lock at o.path (err) and
// returns its exit code: held, or the wait ran out (o.heldCode; exit 124
// for a backend's wait that ran out, unless -E gave CODE: a host lock's
// gives o.heldCode, as flock(1) does); the waiter's lease lost while it
// waited (125); the server out of reach (123); else a usage error.
func notAcquired(w io.Writer, t Target, o runOptions, err error) int {
	_, host := t.(*hostTarget)
	timedOut := errors.Is(err, context.DeadlineExceeded)
	switch {
	case errors.Is(err, ErrUnreachable):
		return failure(w, err, o)
	case errors.Is(err, proclock.ErrHeld) || host && timedOut:
		if !o.quiet {
			explainHeld(w, t, o, err, "")
		}
		if timedOut && !host && !o.heldCodeSet {
			return exitTimedOut
		}
		return o.heldCode
	case errors.Is(err, proclock.ErrLost):
		// The waiter's own lease died while it waited: COMMAND never
		// started, and the exit is a loss's.
		complain(w, fmt.Errorf("proclock: lost %s while waiting for it; COMMAND did not start: %w", o.path, err))
		return exitLost
	}
	return failure(w, err, o)
}

// failure reports an error that ends a run before it could do its work,
// with what to do about it and, for -v, its cause in full, and returns
// its exit code (failureCode).
func failure(w io.Writer, err error, o runOptions) int {
	note := pathNote(o.path, err)
	if note == "" && errors.Is(err, proclock.ErrNotLockFile) {
		note = ownScriptNote(o.path, o.command)
	}
	complain(w, noted(withHint(err), note))
	if o.verbose {
		explainCause(w, err)
	}
	return failureCode(err)
}

// failureCode is the exit code of an error that ends a run or a status
// before it could do its work: exitUnreachable for a server that cannot
// be reached, exitUsage for the rest.
func failureCode(err error) int {
	if errors.Is(err, ErrUnreachable) {
		return exitUnreachable
	}
	return exitUsage
}

// commandOf is COMMAND, ready to start with std's streams, or nil and
// the exit code when it cannot start here. COMMAND is looked up before
// the lock is taken: a typo should not wait for the holder, nor take the
// lock from the next caller.
func commandOf(o runOptions, std streams) (*exec.Cmd, int) {
	if !canStartProcesses {
		complain(std.err, fmt.Errorf("proclock run: starting a command is not possible on %s", runtime.GOOS))
		return nil, exitUsage
	}
	if _, err := exec.LookPath(o.command[0]); err != nil {
		return nil, cannotStart(std.err, o.command[0], err)
	}
	cmd := exec.Command(o.command[0], o.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.in, std.out, std.err
	return cmd, 0
}

// catchRelayed catches the signals run relays, before the lock is
// taken, so that none of them kills proclock between taking the lock and
// starting COMMAND; the caller stops it (signal.Stop).
func catchRelayed() chan os.Signal {
	sigs := make(chan os.Signal, 8)
	catch(sigs, relayed)
	return sigs
}

// catch sends the signals of list to sigs, except those proclock was
// started ignoring (nohup, a script's background job): catching one would
// stop ignoring it, for COMMAND too.
func catch(sigs chan<- os.Signal, list []os.Signal) {
	for _, sig := range list {
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
}

// takeOrSignal runs take within o's timeout, and ends its wait when a
// signal arrives first: it then returns the signal, having released
// whatever take got as it ended.
func takeOrSignal(o runOptions, sigs <-chan os.Signal, take func(context.Context) (Held, error)) (Held, os.Signal, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	type result struct {
		lock Held
		err  error
	}
	done := make(chan result, 1)
	go func() {
		l, err := take(ctx)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		return r.lock, nil, r.err
	case sig := <-sigs:
		cancel()
		if r := <-done; r.err == nil {
			r.lock.Release()
		}
		return nil, sig, nil
	}
}

// take takes the lock; with -v it first tries once, to say whom it waits
// for before it waits, and then says how long taking it took and what it
// holds.
func take(ctx context.Context, t Target, o runOptions, stderr io.Writer) (Held, error) {
	if !o.verbose {
		return t.Acquire(ctx, !o.noWait)
	}
	ctx = context.WithValue(ctx, noticeKey{}, func(news string) { fmt.Fprintf(stderr, "proclock: %s: %s\n", o.path, news) })
	began := time.Now()
	h, err := t.Acquire(ctx, false)
	if errors.Is(err, proclock.ErrHeld) && !o.noWait {
		explainHeld(stderr, t, o, err, "; waiting")
		h, err = t.Acquire(ctx, true)
	}
	if err == nil {
		what := h.Describe()
		if what != "" {
			what = ": " + what
		}
		fprintf(stderr, "proclock: took %s after %v%s\n", o.path, roughly(time.Since(began)), what)
	}
	return h, err
}

// explainHeld prints, in one line, that the lock is held and by whom, and
// then what proclock does about it. The held error names the holder;
// Inspect adds since when, the mechanism that holds it (as status says,
// even when the holder is unknown: a torn stamp is the file mechanism's),
// and a cluster lock's facts.
func explainHeld(w io.Writer, t Target, o runOptions, err error, then string) {
	rep := Report{Status: proclock.Status{Path: o.path, State: proclock.StateHeld}}
	held, isHeld := errors.AsType[*proclock.HeldError](err)
	if isHeld {
		rep.Holder, rep.Reason = held.Holder, held.Reason
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if now, ierr := t.Inspect(ctx); ierr == nil && now.State == proclock.StateHeld {
		rep.Mechanism, rep.Cluster = now.Mechanism, now.Cluster
		if now.Holder != nil {
			rep = now
		}
	}
	if isHeld && !held.Since.IsZero() {
		rep.AcquiredAt, rep.HeldFor = held.Since, max(time.Since(held.Since), 0)
	}
	prefix := "proclock: "
	if errors.Is(err, context.DeadlineExceeded) {
		prefix += fmt.Sprintf("gave up after %v: ", o.timeout)
	}
	fprintf(w, "%s%s is held by %s%s\n", prefix, o.path, joinFacts(reportFacts(rep)), then)
}

// reportFacts is holderFacts for a report, without a mechanism when none
// is known, and with a cluster lock's facts after the holder's.
func reportFacts(rep Report) []string {
	facts := holderFacts(rep.Status)
	if rep.Mechanism == "" {
		facts = slices.DeleteFunc(facts, func(f string) bool { return f == "mechanism " })
	}
	return append(facts, clusterFacts(rep.Cluster)...)
}

// clusterFacts words a cluster lock's own facts for people.
func clusterFacts(c *ClusterStatus) []string {
	if c == nil || c.Key == "" {
		return nil
	}
	facts := []string{fmt.Sprintf("fence %d", c.Fence), fmt.Sprintf("lease %x", c.Lease)}
	if c.TTL > 0 {
		facts = append(facts, fmt.Sprintf("TTL left %v of %v", c.TTLLeft, c.TTL))
	}
	switch c.Waiters {
	case 0:
	case 1:
		facts = append(facts, "1 waiter")
	default:
		facts = append(facts, fmt.Sprintf("%d waiters", c.Waiters))
	}
	if c.LockDelay {
		facts = append(facts, "serving the lock-delay until "+stamp(c.LockDelayUntil))
	}
	return facts
}

// explainCause prints, for -v, the cause of err in full, as errors.Unwrap
// of a *proclock.Error gives it: what to quote in a report, where the first
// line has it in plain words only (docs/command.md).
func explainCause(w io.Writer, err error) {
	if pe, ok := errors.AsType[*proclock.Error](err); ok && pe.Err != nil {
		fprintf(w, "proclock: the cause in full: %s\n", strings.ReplaceAll(pe.Err.Error(), "\n", " "))
	}
}

// withHint adds what to do to an error the command line can do something
// about: a lock on a network filesystem.
func withHint(err error) error {
	if errors.Is(err, proclock.ErrNetworkFS) {
		return fmt.Errorf("%w (from the command line: --allow-network-fs)", err)
	}
	return err
}

// holdWhileRunning runs COMMAND with the loss stop watching lock,
// releases the lock, and returns run's exit code: exitLost when COMMAND
// was stopped for the lock's loss, else COMMAND's own (dying of the
// signal that killed COMMAND, as COMMAND did). g is COMMAND's guard
// (startGuard), started by now: COMMAND starts only once it is armed.
func holdWhileRunning(cmd *exec.Cmd, sigs chan os.Signal, stderr io.Writer, path string, lock Held, grace time.Duration, g *guard) int {
	catch(sigs, passedOn) // for COMMAND only: they do not end the wait
	stop := startLossStop(lock, grace, sigs)
	pauseAt("locked")
	g = g.armed(stderr)
	pauseAt("armed")
	code, killedBy := supervise(cmd, sigs, stderr, g)
	pgid := 0
	if cmd.Process != nil {
		pgid = cmd.Process.Pid // COMMAND leads its own group
	}
	lost, how := stop.finish(pgid)
	g.dismiss() // the job is over: nothing of it is left to kill
	if err := lock.Release(); err != nil && lost == "" {
		// COMMAND's status says how the work went; a failed clean-up is
		// told, not folded into it.
		complain(stderr, err)
	}
	if lost != "" {
		tellLost(stderr, path, lost, how)
		return exitLost
	}
	if killedBy != nil {
		dieOf(killedBy)
	}
	return code
}

// tellLost says, in one line, that the lock was lost and what run did:
// how, the signals it sent.
func tellLost(w io.Writer, path, why, how string) {
	fprintf(w, "proclock: lost %s while COMMAND ran (%s); stopped COMMAND's process group: %s\n",
		path, strings.TrimPrefix(why, "proclock: "), how)
}

// runHelp is run's help, with the backends' parts.
func runHelp(backends []Backend) string {
	help := runUsage + exitTable(runExits, backends) + "\n" + runExamples
	for _, b := range backends {
		help += "\n" + b.Usage()
	}
	return help
}
