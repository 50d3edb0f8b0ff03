//go:build !unix

package cli

// killGroup: there are no process groups to signal here (windows runs
// COMMAND in a job object, docs/command.md); the loss is told and exits
// with its code when COMMAND ends.
func killGroup(int) {}

// groupLives: no group to wait for here.
func groupLives(int) bool { return false }
