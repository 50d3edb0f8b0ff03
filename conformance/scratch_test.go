//go:build unix

package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// A Platform written from scratch over the os package, as someone porting
// proclock to a new host would: an FS of the nine operations locks perform
// and a table of made-up processes, with no wake-up source and real time.
// It passes the suite with the file mechanism.
func TestScratchPlatform(t *testing.T) {
	conformance.Run(t, scratchHarness{})
}

// scratchFS is lockfs.FS over package os. Each process has its own value
// (id), as proclock keys its in-process turns by the FS.
type scratchFS struct{ id int }

func (scratchFS) OpenFile(name string, flag int, perm fs.FileMode) (lockfs.File, error) {
	return orNil(os.OpenFile(name, flag, perm))
}

func (scratchFS) OpenNoFollow(name string) (lockfs.File, error) {
	return orNil(os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0))
}

// orNil keeps a nil *os.File from becoming a non-nil lockfs.File.
func orNil(f *os.File, err error) (lockfs.File, error) {
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (scratchFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }
func (scratchFS) Remove(name string) error               { return os.Remove(name) }
func (scratchFS) Rename(oldname, newname string) error   { return os.Rename(oldname, newname) }
func (scratchFS) Link(oldname, newname string) error     { return os.Link(oldname, newname) }

func (scratchFS) FileID(name string) (lockfs.FileID, error) { return idOf(os.Lstat(name)) }

func (scratchFS) FileIDOf(f lockfs.File) (lockfs.FileID, error) {
	if _, ok := f.(*os.File); !ok {
		return lockfs.FileID{}, &fs.PathError{Op: "fileid", Err: lockfs.ErrNoFileID}
	}
	return idOf(f.Stat())
}

func (scratchFS) DirID(dir string) (lockfs.FileID, error) {
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = &fs.PathError{Op: "stat", Path: dir, Err: syscall.ENOTDIR}
	}
	return idOf(fi, err)
}

// idOf is the device and inode a stat found; no birth time.
func idOf(fi fs.FileInfo, err error) (lockfs.FileID, error) {
	if err != nil {
		return lockfs.FileID{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	return lockfs.FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}

// scratchHost is the table of the made-up processes of one world.
type scratchHost struct {
	mu    sync.Mutex
	next  int
	alive map[int]uint64 // pid: start time
}

// scratchProc is one made-up process: its identity, and platform.Process.
type scratchProc struct {
	host   *scratchHost
	id     platform.Identity
	failed atomic.Bool // FailIdentity
}

func (p *scratchProc) Self() (platform.Identity, error) {
	if p.failed.Load() {
		return platform.Identity{}, errors.New("scratch: no identity")
	}
	return p.id, nil
}

func (p *scratchProc) Lookup(pid int) (platform.PIDInfo, error) {
	p.host.mu.Lock()
	defer p.host.mu.Unlock()
	start, ok := p.host.alive[pid]
	return platform.PIDInfo{Exists: ok, StartTime: start}, nil
}

// The harness: a world is a temporary directory and a host; peers lock
// through their own Platform in this process.
type scratchHarness struct{}

func (scratchHarness) Mechanism() proclock.Mechanism { return proclock.MechanismFile }

func (scratchHarness) New(t *testing.T) conformance.World {
	return &scratchWorld{dir: t.TempDir(), host: &scratchHost{next: 1000, alive: map[int]uint64{}}}
}

type scratchWorld struct {
	dir  string
	host *scratchHost
}

func (w *scratchWorld) Dir() string                               { return w.dir }
func (w *scratchWorld) FS() lockfs.FS                             { return scratchFS{} }
func (w *scratchWorld) Now() time.Time                            { return time.Now() }
func (w *scratchWorld) Advance(time.Duration) bool                { return false }
func (w *scratchWorld) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (w *scratchWorld) Chtimes(name string, a, m time.Time) error { return os.Chtimes(name, a, m) }

func (w *scratchWorld) Spawn(t *testing.T) conformance.Peer {
	w.host.mu.Lock()
	defer w.host.mu.Unlock()
	w.host.next++
	pid := w.host.next
	start := uint64(time.Now().UnixNano())
	w.host.alive[pid] = start
	proc := &scratchProc{host: w.host, id: platform.Identity{Host: "scratch", BootID: "boot", PID: pid, StartTime: start}}
	p := &platform.Platform{FS: scratchFS{id: pid}, Process: proc}
	return &scratchPeer{proc: proc, p: p, locks: map[string]*proclock.Lock{}}
}

type scratchPeer struct {
	proc  *scratchProc
	p     *platform.Platform
	mu    sync.Mutex
	locks map[string]*proclock.Lock
}

func (sp *scratchPeer) Identity() platform.Identity { return sp.proc.id }

func (sp *scratchPeer) Acquire(ctx context.Context, path string, opts proclock.Options) error {
	l, err := proclock.Acquire(ctx, sp.p, path, opts)
	if err == nil {
		sp.mu.Lock()
		sp.locks[path] = l
		sp.mu.Unlock()
	}
	return err
}

func (sp *scratchPeer) Release(path string) error {
	sp.mu.Lock()
	l := sp.locks[path]
	delete(sp.locks, path)
	sp.mu.Unlock()
	if l == nil {
		return fmt.Errorf("pid %d holds no lock at %s", sp.proc.id.PID, path)
	}
	return l.Release()
}

func (sp *scratchPeer) IsHeld(ctx context.Context, path string) (bool, error) {
	return proclock.IsHeld(ctx, sp.p, path)
}

func (sp *scratchPeer) Inspect(ctx context.Context, path string) (proclock.Status, error) {
	return proclock.Inspect(ctx, sp.p, path)
}

// Kill forgets the peer's pid and its locks, releasing nothing: its lock
// files stay, stamped with a pid that no longer exists.
func (sp *scratchPeer) Kill() {
	sp.proc.host.mu.Lock()
	delete(sp.proc.host.alive, sp.proc.id.PID)
	sp.proc.host.mu.Unlock()
	sp.mu.Lock()
	clear(sp.locks)
	sp.mu.Unlock()
}

func (sp *scratchPeer) FailIdentity() bool {
	sp.proc.failed.Store(true)
	return true
}
