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
// among hosts that share one filesystem and one clock. Spawn, SpawnPID and
// Reboot act on the view's host and namespace; the other methods on what
// is shared. A World is safe for concurrent use.
type World struct {
	u    *universe
	host *host
	ns   *namespace
}

// universe is what every view of one world shares.
type universe struct {
	fs *memfs // with the clock and the hooks

	mu        sync.Mutex // guards boots, pid tables and what follows
	lastStart uint64
	nextNS    uint64
}

type host struct {
	name       string
	bootID     string
	namespaces []*namespace
}

// namespace is a pid table: the live processes by pid.
type namespace struct {
	id      uint64
	host    *host
	nextPID int
	procs   map[int]*Process
}

// New returns a world with one host, "fakehost", in its first boot and pid
// namespace; a filesystem holding "/" (0755) and "/tmp" (1777); and a
// clock at 2026-01-01T00:00:00Z.
func New() *World {
	u := &universe{fs: newMemFS(newClock(epoch), &hooks{}), nextNS: firstChildNamespace}
	return u.newHost("fakehost")
}

func (u *universe) newHost(name string) *World {
	h := &host{name: name, bootID: newBootID()}
	return &World{u: u, host: h, ns: newNamespace(h, rootNamespace)}
}

func newNamespace(h *host, id uint64) *namespace {
	ns := &namespace{id: id, host: h}
	ns.reset()
	h.namespaces = append(h.namespaces, ns)
	return ns
}

func (ns *namespace) reset() {
	ns.nextPID = firstPID
	ns.procs = make(map[int]*Process)
}

// newBootID returns a random boot id as linux forms them (122 random bits:
// never one seen before).
func newBootID() string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rand.Uint32(), rand.Uint32N(1<<16),
		rand.Uint32N(1<<12), 0x8000|rand.Uint32N(1<<14), rand.Uint64N(1<<48))
}

// NewHost returns another host of this world, with its own boot and pid
// namespace, sharing the filesystem, clock and hooks. Two hosts may have
// one name, as two machines sharing NFS may.
func (w *World) NewHost(name string) *World {
	return w.u.newHost(name)
}

// NewPIDNamespace returns another pid namespace of this host and boot (a
// container's), whose pids may be this one's.
func (w *World) NewPIDNamespace() *World {
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	id := w.u.nextNS
	w.u.nextNS++
	return &World{u: w.u, host: w.host, ns: newNamespace(w.host, id)}
}

// Spawn starts a process with the next free pid (from 100) and a start
// time no other process of the world has.
func (w *World) Spawn() *Process {
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	for w.ns.procs[w.ns.nextPID] != nil {
		w.ns.nextPID++
	}
	w.ns.nextPID++
	return w.u.spawn(w.ns, w.ns.nextPID-1)
}

// SpawnPID starts a process with pid, reused after one that died: it gets
// a new start time. It fails while a live process has that pid.
func (w *World) SpawnPID(pid int) (*Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("fake: spawn pid %d: not a process id", pid)
	}
	w.u.mu.Lock()
	defer w.u.mu.Unlock()
	if w.ns.procs[pid] != nil {
		return nil, fmt.Errorf("fake: spawn pid %d: in use", pid)
	}
	return w.u.spawn(w.ns, pid), nil
}

// spawn makes a live process; u.mu is held. Its start time is the clock in
// microseconds (as darwin counts), unique in the world.
func (u *universe) spawn(ns *namespace, pid int) *Process {
	start := uint64(u.fs.clock.Now().UnixMicro())
	if start <= u.lastStart {
		start = u.lastStart + 1
	}
	u.lastStart = start
	p := &Process{u: u, ns: ns, pid: pid, died: make(chan struct{}), id: platform.Identity{
		Host: ns.host.name, BootID: ns.host.bootID, PID: pid, StartTime: start, PIDNamespace: ns.id}}
	p.fs = &actor{m: u.fs, proc: p, pid: pid}
	ns.procs[pid] = p
	return p
}

// Reboot restarts this view's host: its processes die (as Kill), it gets a
// new boot id, and its pids start again from 100. The filesystem stays.
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
	w.host.bootID = newBootID()
	w.u.mu.Unlock()
	for _, p := range dead {
		p.bury()
	}
}

// FS returns the world's own view of the filesystem, with root's powers;
// its operations run hooks with Event.PID 0.
func (w *World) FS() lockfs.FS { return w.u.fs.world }

// WindowsSharing shares files from now on as windows does between
// proclock and go-sqlite3: a file SQLite's VFS has open (without
// FILE_SHARE_DELETE) cannot be removed nor renamed from or over (an error
// proclock reads as windows' sharing violation).
func (w *World) WindowsSharing() {
	m := w.u.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	m.windowsSharing = true
}

// OpenFiles returns how many files are open in the world: a check for leaks.
func (w *World) OpenFiles() int {
	w.u.fs.mu.Lock()
	defer w.u.fs.mu.Unlock()
	return len(w.u.fs.open)
}
