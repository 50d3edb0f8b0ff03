// Package explore runs lock users, fake processes of one fake world, under
// every schedule of their filesystem operations: a stateless model checker
// for proclock's on-disk protocol (docs/protocol.md).
//
// Each user runs in its own goroutine and stops before each of its
// filesystem operations (and before each of SQLite's calls at the lock
// table, "lock"), at a hook, until the scheduler picks it. Only one
// user runs at a time, from one stop to its next, so a run is a sequence of
// steps, one user's at a time, and a schedule is the list of who went at
// each step. Explore runs the users again and again from scratch (a new
// world each time), replaying a prefix of choices and then taking new ones,
// depth first, until every schedule has been run:
//
//   - Sleep sets prune schedules that only reorder independent steps (two
//     looks at one file, or steps on different files): such reorderings
//     reach the same states, so every state reachable is still visited
//     (Godefroid, "Partial-order methods for the verification of
//     concurrent systems", 1996, chapter 5). Two steps are dependent when
//     they act on one file (a lock file, its mark, its guards, whose
//     private names count as the guard's) and one of them changes it, or
//     when both act at its SQLite lock; see Dependent.
//   - With Config.Crash, every run may also kill one user (fake.Process.Kill)
//     before one of its steps that changes something (a look before the
//     next change is the same crash, seen from outside), or while it is
//     asleep.
//   - A user may stop asleep (a step whose fake.Event.Ready is set: a
//     waiter blocked in the kernel's lock queue): it is not let go until
//     what it sleeps for has come (the lock let go, its holder's death),
//     though it may be killed there. A run in which every user left is asleep
//     fails: nothing is left to wake them.
//
// A run's cost is its steps, the replayed ones too: each is two goroutine
// switches (the scheduler's and the user's) and the user's own work. The
// scheduler formats nothing while it runs (a trail is written out only for
// a failure), compares a replayed step with the frame it replays in place,
// watches for a stalled user with one ticker a run (not a timer a step),
// and reuses from run to run the frames backtracking dropped, the trail's
// buffer, and the goroutines that ran the users (their stacks grown).
// None of that changes which schedules are run, nor their counts.
//
// Time is each user's own (User.Platform): a sleep moves that user's clock
// and no one else's, so that the random pauses of one user never change
// what another decides, and a run is the same every time it is replayed.
// A replay that does not see the same steps fails the exploration.
package explore

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// Step is what a user is about to do when it stops: a filesystem operation
// (Op and paths, as the hook saw them, Path normalised by Config.Key), or a
// stop of its own (Label, from User.Critical).
type Step struct {
	Op      string
	Call    string
	Handle  bool
	Path    string
	NewPath string
	Flag    int
	Label   string
}

func (s Step) String() string {
	if s.Label != "" {
		return s.Label
	}
	var b strings.Builder
	b.WriteString(s.Call)
	if s.Handle {
		b.WriteString(" (handle)")
	}
	b.WriteString(" ")
	b.WriteString(s.Path)
	if s.NewPath != "" {
		b.WriteString(" -> ")
		b.WriteString(s.NewPath)
	}
	if s.Op == "open" {
		b.WriteString(" (")
		b.WriteString(flagString(s.Flag))
		b.WriteString(")")
	}
	return b.String()
}

func flagString(f int) string {
	var parts []string
	switch f & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_WRONLY:
		parts = append(parts, "write")
	case os.O_RDWR:
		parts = append(parts, "read-write")
	default:
		parts = append(parts, "read")
	}
	if f&os.O_CREATE != 0 {
		parts = append(parts, "create")
	}
	if f&os.O_EXCL != 0 {
		parts = append(parts, "excl")
	}
	if f&os.O_TRUNC != 0 {
		parts = append(parts, "trunc")
	}
	return strings.Join(parts, "|")
}

// access is one thing a step touches: which file a name names
// (accessName), a file's bytes, size and times (accessBytes), or the
// SQLite lock on a file (accessLock), each by the name (normalised) it is
// reached by. Files reached
// by one name count as one, whichever file the name names at the time:
// steps on different files may then count as dependent, never the
// reverse.
type access struct {
	kind  accessKind
	path  string
	write bool
}

// accessKind is what of a name's file an access touches.
type accessKind uint8

const (
	accessName accessKind = iota
	accessBytes
	accessLock
)

// accesses lists what s touches:
//
//   - by name: an open looks at the name (and a create changes it, a
//     truncating open the bytes); stat and lstat look at the name and the
//     bytes; FileID at the name only; remove, rename and link change
//     names;
//   - on an open file: reads and File.Stat look at the bytes, writes and
//     truncations change them; FileIDOf and Sync touch nothing another
//     user sees (a file's identity never changes);
//   - SQLite's lock calls, and any close (which drops a SQLite lock with
//     its file), change the lock;
//   - a directory's own identity (DirID), which nothing here
//     changes, counts as a look at its name;
func accesses(s Step) []access {
	if s.Label != "" {
		return nil
	}
	name := func(p string, w bool) access { return access{accessName, p, w} }
	bytes := func(p string, w bool) access { return access{accessBytes, p, w} }
	lock := access{accessLock, s.Path, true}
	if s.Handle {
		switch s.Op {
		case "read":
			return []access{bytes(s.Path, false)}
		case "stat":
			if s.Call == "fileid" {
				return nil
			}
			return []access{bytes(s.Path, false)}
		case "write", "truncate":
			return []access{bytes(s.Path, true)}
		case "sync":
			return nil
		case "close", "lock":
			return []access{lock}
		}
		return []access{name(s.Path, true), bytes(s.Path, true), lock}
	}
	switch s.Op {
	case "open":
		a := []access{name(s.Path, s.Flag&os.O_CREATE != 0)}
		if s.Flag&os.O_TRUNC != 0 {
			a = append(a, bytes(s.Path, true))
		}
		return a
	case "stat":
		if s.Call == "fileid" || s.Call == "dirid" {
			return []access{name(s.Path, false)}
		}
		return []access{name(s.Path, false), bytes(s.Path, false)}
	case "remove":
		return []access{name(s.Path, true)}
	case "rename", "rename-noreplace", "link":
		return []access{name(s.Path, true), name(s.NewPath, true)}
	}
	// Anything else: everything about the name, changed.
	return []access{name(s.Path, true), bytes(s.Path, true), lock}
}

// Changes reports whether s may change anything another user can see.
func Changes(s Step) bool {
	for _, a := range accesses(s) {
		if a.write {
			return true
		}
	}
	return false
}

// Dependent reports whether two steps of different users may not commute:
// they touch one thing and at least one of them changes it.
func Dependent(a, b Step) bool {
	for _, x := range accesses(a) {
		for _, y := range accesses(b) {
			if x.kind == y.kind && x.path == y.path && (x.write || y.write) {
				return true
			}
		}
	}
	return false
}

// GuardKey is the default Config.Key: a guard's private name
// ("<path>.stale-<pid>-<random>", where a reclaim renames a stale guard)
// is the guard's own, and a temporary file ("<name>.new-<pid>-<random>",
// where a record is written whole before it is linked to its name) is its
// name's, so that steps on either are dependent and runs replay with their
// random names.
func GuardKey(path string) string {
	if i := strings.LastIndex(path, ".new-"); i >= 0 {
		path = path[:i]
	}
	if i := strings.LastIndex(path, ".stale-"); i >= 0 {
		return path[:i+len(".stale")]
	}
	return path
}

// Config says what to explore.
type Config struct {
	// Setup builds one run: it stages the world's files and adds the
	// users (Run.User). It may return a check to run once every user has
	// finished, or nil.
	Setup func(r *Run) (final func() error)
	// MaxSteps bounds a run's steps; a run that reaches it is cut (and
	// counted in Result.Cut), its remaining schedules unexplored.
	MaxSteps int
	// Crash explores, beside every schedule, the same schedule with one
	// user killed before each of its steps that changes something.
	Crash bool
	// MaxRuns stops the exploration, incomplete (Result.Complete unset),
	// after that many runs; 0 means no bound.
	MaxRuns int
	// Key normalises a path for dependence and replay; nil: GuardKey.
	Key func(string) string
	// Preemptions, when above 0, bounds the preemptions of a run: the
	// times the scheduler lets another user go while the one that went
	// last could go on (Musuvathi and Qadeer, "Iterative context bounding
	// for systematic testing of multithreaded programs", PLDI 2007). Every
	// schedule within the bound is run, without sleep sets (whose pruning
	// assumes schedules that the bound may have cut).
	Preemptions int
	// MinSleep is the least a sleep moves a user's clock: a sleep of
	// less moves it by MinSleep. A loop that sleeps until some time has
	// passed (SQLite's busy handler) then makes fewer rounds, each of them
	// steps to interleave.
	MinSleep time.Duration
	// Stall is how long a run waits for a user that was let go to stop
	// again or finish before it fails (a user blocked outside the
	// scheduler); 0 means 10 s.
	Stall time.Duration
}

// Result counts what an exploration did.
type Result struct {
	// Runs is how many runs were made in all, Crashed how many of them
	// killed a user, Pruned how many ended early because every user
	// left to go was asleep (its schedules explored elsewhere), Cut how
	// many reached MaxSteps.
	Runs, Crashed, Pruned, Cut int
	// Complete is set when every schedule was explored.
	Complete bool
	// Deepest is the most steps a run took.
	Deepest int
	Elapsed time.Duration
}

func (r Result) String() string {
	s := fmt.Sprintf("%d runs (%d with a crash, %d pruned by sleep sets), deepest %d steps, in %v", r.Runs, r.Crashed, r.Pruned, r.Deepest, r.Elapsed.Round(time.Millisecond))
	if r.Cut > 0 {
		s += fmt.Sprintf(", %d cut at the step bound", r.Cut)
	}
	if !r.Complete {
		s += ", INCOMPLETE"
	}
	return s
}

// Failure is the error of an exploration that found a run breaking a
// check: what broke, and the trail of steps that led there.
type Failure struct {
	Err   error
	Trail []string
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v\ntrail (%d steps):", f.Err, len(f.Trail))
	for i, s := range f.Trail {
		fmt.Fprintf(&b, "\n  %3d. %s", i+1, s)
	}
	return b.String()
}

func (f *Failure) Unwrap() error { return f.Err }

// choice is what the scheduler does at a step: let a user take its step,
// or kill it.
type choice struct {
	user int
	kill bool
}

// frame is one step of the schedule being explored: who could go (and
// what each would do), who is asleep, what has been tried, and what is
// being tried now.
type frame struct {
	enabled []int
	live    []int  // the users not finished: the enabled ones, and those asleep
	steps   []Step // by user index; only the live users' are set
	sleep   userSet
	kills   bool // a crash may still be chosen here
	tried   []choice
	cur     choice
	// With a preemption bound: the user that took the step before this
	// one (-1: none), and how many preemptions the steps before took.
	prev        int
	preemptions int
	bound       int // -1: none
}

// userSet is a set of users, by index (Run.User keeps a run's users
// fewer than 64).
type userSet uint64

func (s userSet) has(u int) bool { return s&(1<<u) != 0 }

// cost is how many preemptions choosing c at f takes: one to let another
// user go while the one that went last could go on.
func (f *frame) cost(c choice) int {
	if c.kill || f.prev < 0 || c.user == f.prev || !slices.Contains(f.enabled, f.prev) {
		return 0
	}
	return 1
}

func (f *frame) triedChoice(c choice) bool {
	return slices.Contains(f.tried, c)
}

// next is the first choice at f not yet tried and not asleep: users'
// steps first, then crashes.
func (f *frame) next() (choice, bool) {
	for _, u := range f.enabled {
		c := choice{user: u}
		if !f.sleep.has(u) && !f.triedChoice(c) && (f.bound < 0 || f.preemptions+f.cost(c) <= f.bound) {
			return c, true
		}
	}
	if f.kills {
		for _, u := range f.live {
			c := choice{user: u, kill: true}
			if (Changes(f.steps[u]) || f.steps[u].Label != "") && !f.triedChoice(c) {
				return c, true
			}
		}
	}
	return choice{}, false
}

// childSleep is the sleep set after f's current choice: the users asleep
// at f or tried before it whose steps are independent of it. After a
// crash nobody sleeps: a kill changes everything.
func (f *frame) childSleep() userSet {
	var s userSet
	if f.cur.kill {
		return s
	}
	step := f.steps[f.cur.user]
	add := func(u int) {
		if u != f.cur.user && !Dependent(f.steps[u], step) {
			s |= 1 << u
		}
	}
	for b := f.sleep; b != 0; b &= b - 1 {
		add(bits.TrailingZeros64(uint64(b)))
	}
	for _, c := range f.tried {
		if !c.kill {
			add(c.user)
		}
	}
	return s
}

// Explore runs every schedule cfg describes, and returns what it did and
// the first failure: a user's body that failed, two users in their
// critical sections at once, a final check that failed, or a replay that
// went another way than the run it replays.
func Explore(cfg Config) (Result, error) {
	start := time.Now()
	var res Result
	sr := search{workers: newWorkers()}
	defer sr.workers.stop()
	for {
		if cfg.MaxRuns > 0 && res.Runs >= cfg.MaxRuns {
			res.Elapsed = time.Since(start)
			return res, nil
		}
		res.Runs++
		out, err := sr.runOnce(cfg)
		res.Deepest = max(res.Deepest, out.steps)
		if out.crashed {
			res.Crashed++
		}
		if out.pruned {
			res.Pruned++
		}
		if out.cut {
			res.Cut++
		}
		if err != nil {
			res.Elapsed = time.Since(start)
			return res, err
		}
		// Backtrack to the deepest step with a choice left.
		for len(sr.stack) > 0 {
			top := sr.stack[len(sr.stack)-1]
			top.tried = append(top.tried, top.cur)
			if c, ok := top.next(); ok {
				top.cur = c
				break
			}
			sr.stack = sr.stack[:len(sr.stack)-1]
			sr.free = append(sr.free, top)
		}
		if len(sr.stack) == 0 {
			res.Complete = true
			res.Elapsed = time.Since(start)
			return res, nil
		}
	}
}

// outcome is how one run ended.
type outcome struct {
	steps                int
	crashed, pruned, cut bool
}

// Run is one run: its world and its users.
type Run struct {
	World *fake.World

	cfg    Config
	users  []*User
	byPID  map[int]*User
	events chan *User

	mu      sync.Mutex
	running *User // the user let go, until it stops or finishes
	trail   []trailLine
	failed  error
	inside  []*User  // users in their critical sections
	workers *workers // run the users' bodies; nil: a goroutine each

	// The stall watchdog (watch): awaits counts the scheduler's waits
	// for a user, begun and ended (odd while one waits); stalled is
	// closed once one has lasted Config.Stall; quit ends the watchdog.
	awaits  atomic.Uint64
	stalled chan struct{}
	quit    chan struct{}
}

// trailLine is a line of a run's trail, written out only when the run
// fails (Run.failure): a user's step or its kill, or text.
type trailLine struct {
	user *User
	step Step
	kill bool
	text string
}

func (l trailLine) String() string {
	switch {
	case l.user == nil:
		return l.text
	case l.kill:
		return fmt.Sprintf("%s KILLED before: %v", l.user.Name, l.step)
	}
	return fmt.Sprintf("%s: %v", l.user.Name, l.step)
}

// User is one lock user of a run: a fake process running Body.
type User struct {
	Name string
	Proc *fake.Process

	run    *Run
	idx    int
	body   func(u *User) error
	resume chan struct{}
	// Set by the user's goroutine before it sends on run.events, read
	// by the scheduler after receiving.
	step Step
	done bool
	err  error
	// ready, set with step when the user stops asleep (fake.Event.Ready),
	// says whether it may go on; nil: it may.
	ready func() bool
	// clock is the user's own time.
	clock *localClock
}

// User adds a user named name: a new process of the run's world that, once
// the run starts, runs body in its own goroutine. Body's error fails the
// exploration, unless the user was killed.
func (r *Run) User(name string, body func(u *User) error) *User {
	if len(r.users) == 63 {
		r.Fail(fmt.Errorf("user %s: a run has at most 63 users", name))
	}
	p := r.World.Spawn()
	u := &User{Name: name, Proc: p, run: r, idx: len(r.users), body: body, resume: make(chan struct{}),
		clock: &localClock{base: r.World.Now(), inner: p.Platform().Clock, min: r.cfg.MinSleep}}
	r.users = append(r.users, u)
	r.byPID[p.PID()] = u
	return u
}

// Platform is the user's process's platform with the user's own clock and
// no wake-up source (a wait between attempts sleeps on that clock).
func (u *User) Platform() *platform.Platform {
	pp := u.Proc.Platform()
	pp.Clock = u.clock
	pp.Wake = nil
	return pp
}

// Critical marks the user's critical section: the user, holding a lock,
// stops there once, so that the scheduler can run others while it holds.
// Two live users in their critical sections at once fail the exploration.
// A killed user holds nothing.
func (u *User) Critical() {
	r := u.run
	r.mu.Lock()
	if u.Proc.Alive() {
		for _, v := range r.inside {
			if v.Proc.Alive() {
				r.failLocked(fmt.Errorf("%s holds the lock while %s holds it", u.Name, v.Name))
			}
		}
		r.inside = append(r.inside, u)
		r.trail = append(r.trail, trailLine{text: "   " + u.Name + " holds the lock"})
	}
	r.mu.Unlock()
	// The teardown of the wait that acquired runs beside the holder
	// (attemptUntil): its steps, the queue's leave, are taken here.
	u.stop(Step{Label: "leave its critical section"}, nil)
	r.mu.Lock()
	for i, v := range r.inside {
		if v == u {
			r.inside = append(r.inside[:i], r.inside[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
}

// Logf adds a line to the run's trail, as the user's.
func (u *User) Logf(format string, args ...any) {
	r := u.run
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trail = append(r.trail, trailLine{text: fmt.Sprintf("   %s: %s", u.Name, fmt.Sprintf(format, args...))})
}

func (r *Run) failLocked(err error) {
	if r.failed == nil {
		r.failed = err
	}
}

// Fail fails the run with err (from a final check, say).
func (r *Run) Fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failLocked(err)
}

// stop parks the user before step until the scheduler lets it go. A dead
// user does not stop: it can change nothing.
func (u *User) stop(s Step, ready func() bool) {
	if !u.Proc.Alive() {
		return
	}
	r := u.run
	r.mu.Lock()
	if r.running != u {
		r.failLocked(fmt.Errorf("%s (pid %d) acted at %v while %v was the one running: an operation outside its goroutine", u.Name, u.Proc.PID(), s, r.running.name()))
		r.mu.Unlock()
		return
	}
	r.running = nil
	r.mu.Unlock()
	u.step, u.ready = s, ready
	r.events <- u
	<-u.resume
	u.ready = nil
}

func (u *User) name() string {
	if u == nil {
		return "nobody"
	}
	return u.Name
}

// hook stops a user before each of its operations.
func (r *Run) hook(ev fake.Event) error {
	u := r.byPID[ev.PID]
	if u == nil {
		return nil
	}
	s := Step{Op: ev.Op, Call: ev.Call, Handle: ev.Handle, Path: r.cfg.Key(ev.Path), Flag: ev.Flag}
	if ev.NewPath != "" {
		s.NewPath = r.cfg.Key(ev.NewPath)
	}
	u.stop(s, ev.Ready)
	return nil
}

// let lets u go and waits until it stops again or finishes.
func (r *Run) let(u *User) error {
	r.mu.Lock()
	r.running = u
	r.mu.Unlock()
	u.resume <- struct{}{}
	return r.await(u)
}

func (r *Run) await(u *User) error {
	r.awaits.Add(1)
	select {
	case got := <-r.events:
		r.awaits.Add(1)
		if got != u {
			return fmt.Errorf("%s stopped while %s was the one let go", got.Name, u.Name)
		}
		return nil
	case <-r.stalled:
		return fmt.Errorf("%s neither stopped nor finished within %v: blocked outside the scheduler", u.Name, r.cfg.Stall)
	}
}

// watch is the run's stall watchdog: it closes r.stalled once one of the
// scheduler's waits for a user (await) has lasted a whole tick of
// Config.Stall, so that a user blocked outside the scheduler fails the
// run instead of hanging it. One ticker a run, not a timer for every
// step: a run's steps are many and each takes microseconds.
func (r *Run) watch() {
	t := time.NewTicker(r.cfg.Stall)
	defer t.Stop()
	last := r.awaits.Load()
	for {
		select {
		case <-r.quit:
			return
		case <-t.C:
			n := r.awaits.Load()
			if n%2 == 1 && n == last {
				close(r.stalled)
				return
			}
			last = n
		}
	}
}

// start starts u's goroutine and waits for its first stop.
func (r *Run) start(u *User) error {
	r.mu.Lock()
	r.running = u
	r.mu.Unlock()
	body := func() {
		<-u.resume
		err := u.body(u)
		r.mu.Lock()
		r.running = nil
		r.mu.Unlock()
		u.err, u.done = err, true
		r.events <- u
	}
	if r.workers != nil {
		r.workers.run(body)
	} else {
		go body()
	}
	u.resume <- struct{}{}
	return r.await(u)
}

// workers are the goroutines that run the users' bodies of an
// exploration's runs, one after another: a goroutine whose user finished
// takes the next run's, its stack grown already (a new goroutine's grows
// by copies as the user's calls go deeper, in every run).
type workers struct {
	tasks chan func()
	quit  chan struct{}
}

func newWorkers() *workers {
	return &workers{tasks: make(chan func()), quit: make(chan struct{})}
}

// run runs fn on an idle worker, or on a new one.
func (w *workers) run(fn func()) {
	select {
	case w.tasks <- fn:
	default:
		go w.work(fn)
	}
}

func (w *workers) work(fn func()) {
	for {
		fn()
		select {
		case fn = <-w.tasks:
		case <-w.quit:
			return
		}
	}
}

// stop ends the idle workers, and the others once their users finish.
func (w *workers) stop() { close(w.quit) }

// search is an exploration's state between its runs: the schedule being
// explored (a frame for each of its steps), and what the runs reuse
// rather than allocate anew, each run's steps being many: the frames
// backtracking dropped, and the last run's trail.
type search struct {
	stack   []*frame
	free    []*frame
	trail   []trailLine
	workers *workers
}

// newFrame is a frame of the run r's users ready now, from s.free where
// it can be.
func (s *search) newFrame(r *Run) *frame {
	var f *frame
	if n := len(s.free); n > 0 {
		f = s.free[n-1]
		s.free = s.free[:n-1]
		*f = frame{enabled: f.enabled[:0], live: f.live[:0], steps: f.steps[:0], tried: f.tried[:0]}
	} else {
		f = &frame{}
	}
	f.enabled = r.appendEnabled(f.enabled)
	f.live = r.appendLive(f.live)
	f.steps = slices.Grow(f.steps, len(r.users))[:len(r.users)]
	clear(f.steps)
	for _, i := range f.live {
		f.steps[i] = r.users[i].step
	}
	return f
}

// runOnce makes one run: it replays the stack's choices and extends the
// stack with new frames, first choices taken, until every user has
// finished (or the run is pruned or cut).
func (s *search) runOnce(cfg Config) (out outcome, err error) {
	clear(s.trail) // what it points to may go
	r, final, err := newRun(cfg, s.trail[:0], s.workers)
	defer func() {
		r.abandon()
		r.mu.Lock()
		s.trail = r.trail
		r.mu.Unlock()
	}()
	stack := &s.stack
	fail := r.failure
	if err != nil {
		return out, fail(err)
	}
	crashed := false
	for depth := 0; ; depth++ {
		if err := r.check(); err != nil {
			return out, fail(err)
		}
		if r.allDone() {
			break
		}
		if err := r.asleep(); err != nil {
			return out, fail(err)
		}
		if depth >= cfg.MaxSteps {
			out.cut = true
			return out, nil
		}
		var f *frame
		if depth < len(*stack) {
			f = (*stack)[depth]
			if err := f.same(r); err != nil {
				return out, fail(fmt.Errorf("replay went another way at step %d: %w", depth+1, err))
			}
		} else {
			f = s.newFrame(r)
			f.kills, f.prev, f.bound = cfg.Crash && !crashed, -1, -1
			if cfg.Preemptions > 0 {
				f.bound = cfg.Preemptions
			}
			if depth > 0 {
				parent := (*stack)[depth-1]
				if f.bound < 0 {
					f.sleep = parent.childSleep()
				}
				f.prev = parent.cur.user
				if parent.cur.kill {
					f.prev = -1
				}
				f.preemptions = parent.preemptions + parent.cost(parent.cur)
			}
			c, ok := f.next()
			if !ok {
				// Every user is asleep: what follows was explored
				// from an equivalent state.
				s.free = append(s.free, f)
				out.pruned = true
				return out, nil
			}
			f.cur = c
			*stack = append(*stack, f)
		}
		out.steps = depth + 1
		u := r.users[f.cur.user]
		if f.cur.kill {
			crashed, out.crashed = true, true
		}
		if err := r.take(u, f.cur.kill); err != nil {
			return out, fail(err)
		}
	}
	return out, r.finish(final)
}

// newRun builds a run from cfg and starts its users, each stopped before
// its first step.
func newRun(cfg Config, trail []trailLine, w *workers) (*Run, func() error, error) {
	if cfg.Key == nil {
		cfg.Key = GuardKey
	}
	if cfg.Stall == 0 {
		cfg.Stall = 10 * time.Second
	}
	r := &Run{World: fake.New(), cfg: cfg, byPID: map[int]*User{}, events: make(chan *User),
		trail: trail, workers: w, stalled: make(chan struct{}), quit: make(chan struct{})}
	go r.watch()
	final := cfg.Setup(r)
	r.World.Before("", "", r.hook)
	for _, u := range r.users {
		if err := r.start(u); err != nil {
			return r, final, err
		}
	}
	return r, final, nil
}

// take lets u take its step, or kills it there, and waits for it to stop
// again or finish.
func (r *Run) take(u *User, kill bool) error {
	r.mu.Lock()
	r.trail = append(r.trail, trailLine{user: u, step: u.step, kill: kill})
	r.mu.Unlock()
	if kill {
		u.Proc.Kill()
	}
	return r.let(u)
}

// finish runs the final check of a run whose users have all finished.
func (r *Run) finish(final func() error) error {
	if err := r.check(); err != nil {
		return r.failure(err)
	}
	if final != nil {
		if err := final(); err != nil {
			return r.failure(fmt.Errorf("after the run: %w", err))
		}
	}
	if err := r.check(); err != nil {
		return r.failure(err)
	}
	return nil
}

// failure is err with the run's trail.
func (r *Run) failure(err error) error {
	if _, ok := err.(*Failure); ok {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	trail := make([]string, len(r.trail))
	for i, l := range r.trail {
		trail[i] = l.String()
	}
	return &Failure{Err: err, Trail: trail}
}

// Script runs the users cfg.Setup adds under one schedule, the script's,
// instead of every schedule: a test that stages one interleaving by name.
// The script lets users go (Until, Finish, Kill); once it returns, the
// users that have not finished go on one after the other, and the run is
// checked as an exploration's run is. MaxSteps and Crash are not used.
func Script(cfg Config, script func(s *Scripter) error) error {
	r, final, err := newRun(cfg, nil, nil)
	defer r.abandon()
	if err != nil {
		return r.failure(err)
	}
	if err := script(&Scripter{r: r}); err != nil {
		return r.failure(err)
	}
	for _, u := range r.users {
		if err := (&Scripter{r: r}).Finish(u); err != nil {
			return r.failure(err)
		}
	}
	return r.finish(final)
}

// Scripter lets a script move a run's users.
type Scripter struct{ r *Run }

// Until lets u take steps until the step it is about to take is one stop
// accepts (a step it then has not taken), and reports whether it got
// there; false means u finished first.
func (s *Scripter) Until(u *User, stop func(Step) bool) (bool, error) {
	for !u.done {
		if err := s.r.check(); err != nil {
			return false, err
		}
		if stop(u.step) {
			return true, nil
		}
		if err := s.r.take(u, false); err != nil {
			return false, err
		}
	}
	return false, s.r.check()
}

// Reach is Until, failing when u finishes first.
func (s *Scripter) Reach(u *User, what string, stop func(Step) bool) error {
	ok, err := s.Until(u, stop)
	if err == nil && !ok {
		err = fmt.Errorf("%s finished before it came to %s", u.Name, what)
	}
	return err
}

// Step lets u take its next step.
func (s *Scripter) Step(u *User) error {
	if u.done {
		return fmt.Errorf("%s has finished", u.Name)
	}
	return s.r.take(u, false)
}

// Finish lets u go until it finishes.
func (s *Scripter) Finish(u *User) error {
	_, err := s.Until(u, func(Step) bool { return false })
	return err
}

// At matches a step: call (Step.Call, or a label) on path ("" for any),
// the n-th time (from 1) it is asked about one. Until asks once for each
// step the user stops at.
func At(call, path string, n int) func(Step) bool {
	seen := 0
	return func(st Step) bool {
		if (st.Call != call && st.Label != call) || (path != "" && st.Path != path) {
			return false
		}
		seen++
		return seen == n
	}
}

// same checks that a replay sees what the run it replays saw: the same
// users left, the same of them ready, each about to take the same step.
func (f *frame) same(r *Run) error {
	j, k := 0, 0
	for i, u := range r.users {
		if u.done {
			continue
		}
		if k >= len(f.live) || f.live[k] != i {
			return fmt.Errorf("users left %v, before %v", r.appendLive(nil), f.live)
		}
		k++
		if u.step != f.steps[i] {
			return fmt.Errorf("user %d about to %v, before %v", i, u.step, f.steps[i])
		}
		if u.isReady() {
			if j >= len(f.enabled) || f.enabled[j] != i {
				return fmt.Errorf("users ready %v, before %v", r.enabled(), f.enabled)
			}
			j++
		}
	}
	if j != len(f.enabled) || k != len(f.live) {
		return fmt.Errorf("users ready %v of %v, before %v of %v", r.enabled(), r.appendLive(nil), f.enabled, f.live)
	}
	return nil
}

// check fails the run once a user's body failed or a check broke.
func (r *Run) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil {
		return r.failed
	}
	for _, u := range r.users {
		if u.done && u.err != nil && u.Proc.Alive() {
			return fmt.Errorf("%s: %w", u.Name, u.err)
		}
	}
	return nil
}

// allDone reports whether every user has finished.
func (r *Run) allDone() bool {
	for _, u := range r.users {
		if !u.done {
			return false
		}
	}
	return true
}

// enabled lists the users stopped and ready to go on, by index.
func (r *Run) enabled() []int { return r.appendEnabled(nil) }

// appendEnabled appends the users stopped and ready to go on, by index,
// to e: all of them but those asleep until something wakes them.
func (r *Run) appendEnabled(e []int) []int {
	for i, u := range r.users {
		if !u.done && u.isReady() {
			e = append(e, i)
		}
	}
	return e
}

// appendLive appends the users not finished, by index, to e.
func (r *Run) appendLive(e []int) []int {
	for i, u := range r.users {
		if !u.done {
			e = append(e, i)
		}
	}
	return e
}

// isReady reports whether the user, stopped, may go on: it is not asleep
// (fake.Event.Ready), or what it sleeps for has come.
func (u *User) isReady() bool { return u.ready == nil || u.ready() }

// asleep fails a run in which users are left and every one of them is
// asleep: nothing is left to wake them (User.QueuePlatform: a lost
// wake-up).
func (r *Run) asleep() error {
	var names []string
	for _, u := range r.users {
		if u.done {
			continue
		}
		if u.isReady() {
			return nil
		}
		names = append(names, fmt.Sprintf("%s (%v)", u.Name, u.step))
	}
	return fmt.Errorf("every user left is asleep, and nothing is left to wake them (a lost wake-up): %s", strings.Join(names, ", "))
}

// abandon ends a run's users that have not finished: each is killed and
// let go, so that its goroutine ends. One blocked outside the scheduler is
// left behind (the run failed for it).
func (r *Run) abandon() {
	defer close(r.quit)
	for _, u := range r.users {
		if u.done {
			continue
		}
		u.Proc.Kill()
		r.mu.Lock()
		r.running = u
		r.mu.Unlock()
		select {
		case u.resume <- struct{}{}:
		case <-r.stalled:
			return
		case <-time.After(r.cfg.Stall):
			return
		}
		for {
			// A dead user stops nowhere, so what comes next is its end;
			// done is read only once it has said so.
			if r.await(u) != nil || u.done {
				break
			}
		}
	}
}

// localClock is a user's own clock: it starts at the world's time when the
// user is added and moves by the user's sleeps only. A sleep of a killed
// process fails, as the world's does.
type localClock struct {
	mu      sync.Mutex
	base    time.Time
	elapsed time.Duration
	inner   platform.Clock
	min     time.Duration
}

func (c *localClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.Add(c.elapsed)
}

func (c *localClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := c.inner.Sleep(ctx, 0); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elapsed += max(d, c.min)
	return nil
}
