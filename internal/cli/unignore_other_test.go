//go:build !unix

package cli

// unignoreSignals: only unix starts a process with signals ignored that
// the signal tests send.
func unignoreSignals() {}
