// Package fake is a hermetic world for testing code that takes proclock
// locks: hosts, boots and pid namespaces, fake processes, an in-memory
// filesystem with real inodes, a manual clock, and hooks that stage faults
// between any two filesystem operations. Nothing in it touches the real
// filesystem, processes or time, so its tests are fast, repeatable, and
// run wherever Go runs (wasip1 and js included).
//
// New makes a World; Spawn starts a Process, whose Platform is what
// proclock takes. Each process sees the one filesystem through its own
// lockfs.FS value (so proclock's in-process turns are per process, as
// natively), and Kill ends it as SIGKILL would: its pid is gone, its files
// closed, its SQLite locks dropped, and whatever it still tries fails with
// ErrKilled.
//
// What the world promises:
//
//   - The filesystem behaves as POSIX says: each operation is atomic,
//     O_CREATE|O_EXCL has one winner and never follows a symlink, rename
//     replaces its target in one step, hard links share an inode, a removed
//     file stays readable through open handles, a path follows up to 40
//     symlinks (then ELOOP). Errors are *fs.PathError (*os.LinkError for
//     Rename, Link and Symlink) wrapping syscall.Errno values, so errors.Is
//     with fs.ErrNotExist and the like works. Every process owns every file
//     and its permission bits are checked; the world itself (World.FS and
//     the staging methods: Mkdir, Symlink, Chmod, WriteFile, ...) is root.
//     Names are cleaned lexically (as path.Clean) from "/". WindowsSharing
//     makes a file SQLite's VFS has open unremovable, as on windows (an
//     error proclock reads as windows' sharing violation).
//   - Read returns fewer bytes than asked only at the end of a file, and
//     then with io.EOF.
//   - Inodes have numbers and birth times. A new inode takes the lowest
//     number of one that is gone (no name, no open handle), as ext4 hands
//     a removed file's number to the next file created, and its birth time
//     is the world's clock: until the clock moves, FileID cannot tell the
//     new file from the gone one, as on a filesystem whose times are
//     coarser than the steps between. SwapInode stages a file replaced
//     under its name, ReuseInode one replaced with its number and a later
//     birth time.
//   - Time is the world's own, from 2026-01-01T00:00:00Z: file times and
//     process start times come from it. A Sleep moves it forward at once;
//     Advance moves it explicitly; Freeze makes sleeps wait for Advance.
//   - Process facts follow the host and pid namespace of the asker: a dead
//     pid does not exist, a reused pid has another start time, a Reboot
//     brings a new boot id, another host or namespace has its own pids.
//   - SQLite's locks (SHARED, RESERVED, PENDING, EXCLUSIVE) are kept per
//     inode and belong to the open file, as OFD locks do: two files of
//     one process conflict, a conflict is refused at once, except by the
//     byte-range lock that waits (LockRange: the kernel's queue, where a
//     waiter counts as a sleeper of the world's clock and sleeps until a
//     lock of the inode is let go), and Kill drops every lock of the
//     process in one step. A process's
//     Platform().SQLite takes them as the FS's byte-range locks
//     (lockfs.RangeLocker), as proclock does on linux, so package fake
//     compiles no SQLite engine. Real SQLite (github.com/ncruces/go-sqlite3)
//     runs over the fake filesystem, on the same lock table, for a test
//     that imports package fake/fakesql: connections of its own beside a
//     lock, or the SQLite mechanism's SQL path (fakesql.ViaSQL). Hooks see
//     its file operations with the process's pid, and World.OpenFiles
//     counts the files SQLite has open.
//   - An open file goes with its garbage, as an *os.File does: one that
//     its process no longer reaches, unclosed (a handle of the FS, a file
//     of the VFS, a connection left open), is closed when the collector
//     finds it, as Close closes it: its locks go, it is no longer counted
//     open, and a removed file's inode number is freed. No hook sees that
//     close, which no process makes. A file still reachable is never
//     closed so. A lock that a program keeps only through garbage is then
//     lost in the fake world as on the OS, at a collection no test can
//     time; runtime.GC forces one.
//
// So proclock uses its SQLite mechanism in the fake world, as natively; a
// test takes Platform().WithoutSQLite() to use the file mechanism.
//
// A test that stages a crash of the file mechanism after it wrote its
// stamp in a temporary file, before renaming it to the lock's path
// (docs/protocol.md, "Every record appears whole"):
//
//	w := fake.New()
//	p := w.Spawn()
//	w.Hook(fake.OpRenameNoReplace, "/tmp/app.lock", fake.Before, func(ev fake.Event) error {
//		if ev.PID == p.PID() {
//			p.Kill() // dies with its stamp written, not yet in place
//		}
//		return nil
//	})
//	pp := p.Platform().WithoutSQLite() // the file mechanism
//	_, err := proclock.Acquire(ctx, pp, "/tmp/app.lock", proclock.Options{})
//	// err matches fake.ErrKilled; nothing is at /tmp/app.lock.
//	qp := w.Spawn().Platform().WithoutSQLite()
//	lock, err := proclock.Acquire(ctx, qp, "/tmp/app.lock", proclock.Options{})
package fake
