//go:build !windows

package locktest

// wineVersion is "": wine runs only windows binaries.
func wineVersion() string { return "" }
