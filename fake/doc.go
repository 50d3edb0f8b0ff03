// Package fake is a hermetic world for testing code that takes proclock
// locks: hosts, boots and pid namespaces, fake processes, an in-memory
// filesystem with real inodes, a manual clock, and hooks that stage faults
// between any two filesystem operations. Nothing in it touches the real
// filesystem, processes or time, so its tests are fast, repeatable, and
// run wherever Go runs.
//
// New makes a World; Spawn starts a Process, whose Platform is what
// proclock takes. Kill ends a process as SIGKILL would.
//
// What the world promises:
//
//   - The filesystem behaves as POSIX says: each operation is atomic,
//     O_CREATE|O_EXCL has one winner, rename replaces in one step, hard
//     links share an inode, a removed file stays readable through open
//     handles. Errors are *fs.PathError (*os.LinkError for Rename and
//     Link) wrapping syscall.Errno values. Every process owns every file,
//     whose permission bits are checked; the world (World.FS and the
//     staging methods) is root.
//   - A new inode takes the lowest number of one that is gone, as on
//     ext4, and its birth time is the world's clock: until the clock
//     moves, FileID cannot tell it from the gone one.
//   - Time starts at 2026-01-01T00:00:00Z. A sleep moves it forward at
//     once; Advance moves it; Freeze makes sleeps wait for Advance.
//   - Process facts follow the asker's host and pid namespace: a dead pid
//     does not exist, a reused pid (SpawnPID) has another start time, a
//     Reboot brings a new boot id.
//   - SQLite's locks are kept per inode and belong to the open file, as
//     OFD locks do; a process's Platform().SQLite takes them as the FS's
//     byte-range locks (lockfs.RangeLocker), whose blocking LockRange is
//     the kernel's queue. Package fakesql runs real SQLite on the same
//     table.
//   - A file its process no longer reaches, unclosed, is closed when the
//     collector finds it, as an *os.File is.
package fake
