//go:build !unix

package main

// unignoreSignals: only unix starts a process with signals ignored that
// the signal tests send.
func unignoreSignals() {}
