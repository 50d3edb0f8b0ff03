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

// backendOptions are the backends' options, noted in x when given.
func (x *runExtra) backendOptions(backends []Backend) []option {
	var opts []option
	for _, o := range backendOptions(backends) {
		set, name := o.set, o.names[len(o.names)-1]
		o.set = func(v string) error {
			x.foreign = append(x.foreign, name)
			return set(v)
		}
		opts = append(opts, o)
	}
	return opts
}

// hostOnly refuses the backends' options for a lock on this host.
func (x *runExtra) hostOnly(sub, path string) error {
	if len(x.foreign) == 0 {
		return nil
	}
	return usagef(sub, "%s applies to cluster locks (etcd://...), not to %s", x.foreign[0], path)
}

// runTarget is proclock run on a lock of backend b: the host lock's run
// (runMain), with the backend's acquisition, the loss stop and the exit
// codes of docs/command.md.
func runTarget(b Backend, o runOptions, x runExtra, std streams) int {
	cmd, code := commandOf(o, std)
	if cmd == nil {
		return code
	}
	t, err := b.Open(context.Background(), o.path)
	if err != nil {
		return failure(std.err, err, o.verbose)
	}
	defer t.Close()
	grace, err := time.Duration(0), error(nil)
	if !x.graceSet || x.grace > 0 {
		grace, err = t.Grace(x.grace) // 0: the backend's default
	}
	if err != nil {
		complain(std.err, usagef("run", "%v", err))
		return exitUsage
	}
	sigs := catchRelayed()
	defer signal.Stop(sigs)

	g := startGuard(std.err) // while the lock is taken
	defer g.dismiss()        // for the returns without COMMAND
	held, sig, err := acquireTarget(t, o, sigs, std.err)
	switch {
	case sig != nil:
		dieOf(sig)
		return signalCode(sig)
	case errors.Is(err, ErrUnreachable):
		return failure(std.err, err, o.verbose)
	case errors.Is(err, proclock.ErrHeld) && errors.Is(err, context.DeadlineExceeded):
		explainTargetHeld(std.err, t, o, err, "")
		if o.heldCodeSet {
			return o.heldCode
		}
		return exitTimedOut
	case errors.Is(err, proclock.ErrHeld):
		explainTargetHeld(std.err, t, o, err, "")
		return o.heldCode
	case errors.Is(err, proclock.ErrLost):
		// The waiter's own lease died while it waited: COMMAND never
		// started, and the exit is a loss's.
		complain(std.err, fmt.Errorf("proclock: lost %s while waiting for it; COMMAND did not start: %w", o.path, err))
		return exitLost
	case err != nil:
		return failure(std.err, err, o.verbose)
	}
	if err := held.Err(); err != nil {
		// Lost between the acquisition and COMMAND's start: COMMAND
		// does not start.
		complain(std.err, fmt.Errorf("proclock: lost %s before COMMAND started: %w", o.path, err))
		held.Release()
		return exitLost
	}
	// Set last: os/exec keeps the last of duplicates, so a nested run's
	// values win over the ones it inherits.
	cmd.Env = append(os.Environ(), held.Env()...)
	return holdWhileRunning(cmd, sigs, std.err, o.path, held, grace, g)
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

// heldLock is a lock run holds while COMMAND runs, of this host or of a
// backend: the loss stop watches it, and it is released after COMMAND.
type heldLock interface {
	watched
	Release() error
}

// holdWhileRunning is the one run path of host and backend locks once
// the lock is held: it runs COMMAND with the loss stop watching lock,
// releases the lock, and returns run's exit code: exitLost when COMMAND
// was stopped for the lock's loss, else COMMAND's own (dying of the
// signal that killed COMMAND, as COMMAND did). g is COMMAND's guard,
// started before the lock was taken (startGuard): COMMAND starts only
// once it is armed.
func holdWhileRunning(cmd *exec.Cmd, sigs chan os.Signal, stderr io.Writer, path string, lock heldLock, grace time.Duration, g *guard) int {
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

// failure reports an error that ends a run or a status before it could
// do its work, and returns its exit code: exitUnreachable for a server
// that cannot be reached, exitUsage for the rest.
func failure(w io.Writer, err error, verbose bool) int {
	complain(w, withHint(err))
	if verbose {
		explainCause(w, err)
	}
	if errors.Is(err, ErrUnreachable) {
		return exitUnreachable
	}
	return exitUsage
}

// acquireTarget is acquire for a backend's lock: a signal that arrives
// first ends the wait, holding nothing.
func acquireTarget(t Target, o runOptions, sigs <-chan os.Signal, stderr io.Writer) (Held, os.Signal, error) {
	return takeOrSignal(o, sigs, func(ctx context.Context) (Held, error) {
		return takeTarget(ctx, t, o, stderr)
	})
}

// takeTarget takes the lock; with -v it first tries once, to say whom it
// waits for, and then says how long taking it took and what it holds.
func takeTarget(ctx context.Context, t Target, o runOptions, stderr io.Writer) (Held, error) {
	if !o.verbose {
		return t.Acquire(ctx, !o.noWait)
	}
	ctx = context.WithValue(ctx, noticeKey{}, func(news string) { fmt.Fprintf(stderr, "proclock: %s: %s\n", o.path, news) })
	began := time.Now()
	h, err := t.Acquire(ctx, false)
	if errors.Is(err, proclock.ErrHeld) && !o.noWait {
		explainTargetHeld(stderr, t, o, err, "; waiting")
		h, err = t.Acquire(ctx, true)
	}
	if err == nil {
		fprintf(stderr, "proclock: took %s after %v: %s\n", o.path, roughly(time.Since(began)), h.Describe())
	}
	return h, err
}

// explainTargetHeld is explainHeld for a backend's lock: who holds it,
// from the held error and, when it can be read, the lock's status.
func explainTargetHeld(w io.Writer, t Target, o runOptions, err error, then string) {
	rep := Report{Status: proclock.Status{Path: o.path, State: proclock.StateHeld}}
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		rep.Holder, rep.Reason, rep.AcquiredAt = held.Holder, held.Reason, held.Since
		if !held.Since.IsZero() {
			rep.HeldFor = time.Since(held.Since)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if now, ierr := t.Inspect(ctx); ierr == nil && now.State == proclock.StateHeld {
		rep = now
	}
	prefix := "proclock: "
	if errors.Is(err, context.DeadlineExceeded) {
		prefix += fmt.Sprintf("gave up after %v: ", o.timeout)
	}
	fprintf(w, "%s%s is held by %s%s\n", prefix, o.path, joinFacts(reportFacts(rep)), then)
}

// reportFacts is holderFacts for a backend's report, with a cluster
// lock's facts after the holder's.
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

// graceOr is the grace asked with --grace, or def.
func (x *runExtra) graceOr(def time.Duration) time.Duration {
	if x.graceSet {
		return x.grace
	}
	return def
}

// runHelp is run's help, with the backends' parts.
func runHelp(backends []Backend) string {
	help := runUsage + exitTable(runExits, backends) + "\n" + runExamples
	for _, b := range backends {
		help += "\n" + b.Usage()
	}
	return help
}
