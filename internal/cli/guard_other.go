//go:build !linux

package cli

import "io"

// guardArg is the first argument of proclock re-executed as COMMAND's
// guard, which exists on linux only (guard_linux.go).
const guardArg = "--proclock-internal-guard"

// guardHasIt: there is no guard here (docs/command.md, "The lock and
// COMMAND's processes", says what a killed proclock leaves).
const guardHasIt = false

// guard: none here.
type guard struct{}

// startGuard: there is no guard here.
func startGuard(io.Writer) *guard { return nil }

// armed: there is no guard here.
func (*guard) armed(io.Writer) *guard { return nil }

// dismiss: there is no guard here.
func (*guard) dismiss() {}

// guardMain: there is no guard here.
func guardMain([]string) int { return exitUsage }
