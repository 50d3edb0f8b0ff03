package fake

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

const (
	firstPID            = 100        // a pid table's first, after a boot too
	rootNamespace       = 0xEFFFFFFC // every host's first: Linux's initial one
	firstChildNamespace = 0xF0000000 // NewPIDNamespace's first; then up
)

// World is a view of a fake world: one host and one of its pid namespaces,
// in a universe of hosts that share one filesystem and one clock. New makes
// a world; NewHost and NewPIDNamespace make other views of the same one.
//
// Methods about processes (Spawn, SpawnPID, SetLookupError, Reboot) act on
// the view's host and namespace; the others on the shared filesystem and
// clock. A World is safe for concurrent use.
type World struct {
	u    *universe
	host *host
	ns   *namespace
}

// universe is what every view of one world shares.
type universe struct {
	fs    *memfs
	clock *clock
	hooks *hooks

	mu        sync.Mutex // guards hosts' boots, pid tables and what follows
	lastStart uint64
	nextNS    uint64
}

type host struct {
	name       string
	bootID     string
	namespaces []*namespace
}

// namespace is a pid table: the live processes by pid, and the lookup
// failures staged for pids.
type namespace struct {
	id         uint64
	host       *host
	nextPID    int
	procs      map[int]*Process
	lookupErrs map[int]error
}

// New returns a world with one host, "fakehost", in its first boot (a
// random boot id) and its first pid namespace; a filesystem holding only
// "/" (0755) and "/tmp" (1777); and a clock at 2026-01-01T00:00:00Z that
// moves only when told to or slept on.
func New() *World {
	c := newClock(epoch)
	h := &hooks{}
	u := &universe{clock: c, hooks: h, fs: newMemFS(c, h), nextNS: firstChildNamespace}
	return u.newHost("fakehost")
}

func (u *universe) newHost(name string) *World {
	h := &host{name: name, bootID: newBootID("")}
	ns := newNamespace(h, rootNamespace)
	return &World{u: u, host: h, ns: ns}
}

func newNamespace(h *host, id uint64) *namespace {
	ns := &namespace{id: id, host: h}
	ns.reset()
	h.namespaces = append(h.namespaces, ns)
	return ns
}

// reset empties the pid table, as a boot does.
func (ns *namespace) reset() {
	ns.nextPID = firstPID
	ns.procs = make(map[int]*Process)
	ns.lookupErrs = make(map[int]error)
}

// newBootID returns a random boot id in the form Linux gives them, other
// than old.
func newBootID(old string) string {
	for {
		id := fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x",
			rand.Uint32(), rand.Uint32N(1<<16), rand.Uint32N(1<<12),
			0x8000|rand.Uint32N(1<<14), rand.Uint64N(1<<48))
		if id != old {
			return id
		}
	}
}

// NewHost returns another host of this world, named name, with its own boot
// and pid namespace (whose pids may be the same as this host's), sharing
// this world's filesystem, clock and hooks. Two hosts may have the same
// name: the two machines of an NFS setup whose host names collide.
func (w *World) NewHost(name string) *World {
	return w.u.newHost(name)
}

// NewPIDNamespace returns another pid namespace of this host (same host,
// same boot), with its own pid table: its pids may be the same as this
// one's. A process is visible to Lookup in its own namespace only.
func (w *World) NewPIDNamespace() *World {
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	id := w.u.nextNS
	w.u.nextNS++
	return &World{u: w.u, host: w.host, ns: newNamespace(w.host, id)}
}

// Host returns the name of this view's host.
func (w *World) Host() string { return w.host.name }

// Spawn starts a process in this view's host and pid namespace, with the
// next free pid (pids count up from 100) and a start time no other process
// of the world has.
func (w *World) Spawn() *Process {
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	for w.ns.procs[w.ns.nextPID] != nil {
		w.ns.nextPID++
	}
	pid := w.ns.nextPID
	w.ns.nextPID++
	return w.u.spawn(w.ns, pid)
}

// SpawnPID starts a process with the given pid, as when the system reuses
// the pid of a process that died: it gets a new start time. It fails, with
// an error matching ErrPIDInUse, while a live process of this namespace has
// that pid.
func (w *World) SpawnPID(pid int) (*Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("fake: spawn pid %d: not a process id", pid)
	}
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	if w.ns.procs[pid] != nil {
		return nil, fmt.Errorf("fake: spawn pid %d: %w", pid, ErrPIDInUse)
	}
	return w.u.spawn(w.ns, pid), nil
}

// spawn makes a live process; u.mu is held. Its start time is the world's
// clock in microseconds since 1970 (as darwin and the BSDs count), moved
// on where needed so that no two processes share one.
func (u *universe) spawn(ns *namespace, pid int) *Process {
	start := uint64(u.clock.Now().UnixMicro())
	if start <= u.lastStart {
		start = u.lastStart + 1
	}
	u.lastStart = start
	p := &Process{
		u: u, ns: ns, pid: pid,
		id: platform.Identity{
			Host:         ns.host.name,
			BootID:       ns.host.bootID,
			PID:          pid,
			StartTime:    start,
			PIDNamespace: ns.id,
		},
		died: make(chan struct{}),
	}
	p.fs = &actor{m: u.fs, proc: p, pid: pid}
	ns.procs[pid] = p
	return p
}

// SetLookupError makes Lookup(pid), asked by any process of this view's
// host and pid namespace, fail with err (a permission or I/O failure that
// must never be taken as death); nil clears it. A Reboot clears them all.
func (w *World) SetLookupError(pid int, err error) {
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	if err == nil {
		delete(w.ns.lookupErrs, pid)
		return
	}
	w.ns.lookupErrs[pid] = err
}

// Reboot restarts this view's host: every process of every pid namespace
// of the host dies (as Kill), the host gets a new boot id, and pid tables
// start again from 100, with no staged lookup errors. The filesystem is
// shared and persists.
func (w *World) Reboot() {
	w.u.mu.Lock()
	var dead []*Process
	for _, ns := range w.host.namespaces {
		for _, p := range ns.procs {
			if p.die() {
				dead = append(dead, p)
			}
		}
		ns.reset()
	}
	w.host.bootID = newBootID(w.host.bootID)
	w.u.mu.Unlock()
	for _, p := range dead {
		p.bury()
	}
}

// FS returns the world's own view of the filesystem: no process's, with
// root's powers (permissions are not checked). Its operations run hooks
// with Event.PID 0. The World's own methods stage what no lock does
// (Mkdir, WriteFile, Chmod, ...).
func (w *World) FS() lockfs.FS { return w.u.fs.world }

// WindowsSharing makes the world's files shared as windows shares them
// between proclock and go-sqlite3, from now on: a file SQLite's VFS has
// open (go-sqlite3 opens without FILE_SHARE_DELETE) cannot be removed, nor
// renamed from or over, and the Remove or Rename fails with an error
// proclock reads as windows' sharing violation; a file open only through
// an FS (lockfs's OS opens every file sharing delete there) can, as
// everywhere.
func (w *World) WindowsSharing() {
	m := w.u.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	m.windowsSharing = true
}

// OpenFiles returns how many files are open in the whole world, through
// every view: a test's check for leaks.
func (w *World) OpenFiles() int { return w.u.fs.countOpen(nil) }
