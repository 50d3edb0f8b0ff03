// Package fsx is what proclock's own packages do with a lockfs.FS beyond
// its methods: the optional powers they find by type assertion (Abser,
// DirOpener, LookOpener, Flocker, PathLimits, DirNetworkFS,
// NoReplaceRenamer), the helpers that fall back where an FS has none (Abs,
// KeepDir, OpenLook, StatID), and what an FS's errors say (InUse,
// Exhausted). An FS has a power by having its methods, so lockfs's OS and
// package fake implement them without naming this package; a user's FS
// needs none of them (lockfs's doc says which powers a user's FS offers).
package fsx
