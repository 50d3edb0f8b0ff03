// Package locktest holds helpers shared by proclock's own tests, among
// them the one way they get a second process: the test binary re-executed
// to play a role (NewRole) instead of running tests.
//
//   - The child's environment names the role in PROCLOCK_TEST_ROLE; its
//     command line is the test binary, -test.run=^$, and the role's
//     arguments (Role.Command, Role.Argv).
//   - The package's TestMain hands the process to the role (Main, or
//     MaybePlay before its own set-up), whose result is the exit status.
//   - The role talks to its parent however it likes, usually lines or
//     JSON on stdin and stdout, which Start pipes.
//
// -test.run=^$ keeps a child whose TestMain does not dispatch from running
// the package's tests (and so from starting children of its own): it runs
// none, and its parent sees a child that never played its role.
package locktest
