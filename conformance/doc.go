// Package conformance is one suite of proclock's behaviour (docs/design.md,
// docs/protocol.md) that any platform can be put through, as
// testing/fstest.TestFS serves any fs.FS: Run takes a Harness that makes
// processes taking locks, in this process (Fake, over a fake world) or in
// others (Native, the test binary re-executed), and runs every case against
// the harness's mechanism.
//
// A project puts its platform through the suite from a test of its own,
// with a Harness that spawns its processes (see Fake and Native, and
// FakePeer for a harness of one's own over fake worlds):
//
//	func TestLocks(t *testing.T) {
//		conformance.Run(t, conformance.Fake(proclock.MechanismFile))
//	}
//
// Native peers are this test binary re-executed, so a package that runs the
// Native harness calls MaybeServePeer first thing in its TestMain.
//
// Cases that need to stage something between two steps of one operation
// (a stall, a crash mid-write) live in the mechanisms' own tests, which
// drive package fake's hooks directly; this suite stages only what any
// world can: files at the lock's path, processes that die, and time.
package conformance
