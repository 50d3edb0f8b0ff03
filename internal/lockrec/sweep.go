package lockrec

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/proclock/proclock/platform"
)

// Sweep removes, where a crash was just seen, the leftovers of writers
// gone for certain beside the lock at path: temporary files (CreateWhole)
// and guards set aside, whose record's holder is judged dead from here, or
// without a record past MarkWindow. Failures are ignored: a leftover keeps
// no one out. Names keep path's directory as path spells it (filepath.Join
// would make "/tmp/x" "\tmp\x" on windows, matching no owner).
func Sweep(p *platform.Platform, here *platform.Identity, path string) {
	dir := filepath.Dir(path)
	prefix, _ := filepath.Split(path)
	d, err := p.FS.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	var names []string
	if lister, ok := d.(interface{ Readdirnames(int) ([]string, error) }); ok {
		names, _ = lister.Readdirnames(-1)
	}
	d.Close()
	owners := sweepOwners(path)
	for _, name := range names {
		if full := prefix + name; leftoverName(full, owners) && leftoverDead(p, here, full) {
			p.FS.Remove(full)
		}
	}
}

// sweepOwners are the names whose leftovers a sweep of path looks for,
// each with whether it may be set aside (a guard; path may be one).
func sweepOwners(path string) map[string]bool {
	owners := map[string]bool{path: true, MarkPath(path): false}
	g := path
	for range 3 { // the guards, as deep as guards go (stamplock's maxGuardDepth)
		g = Sidecar(g, GuardSuffix)
		owners[g] = true
	}
	return owners
}

// leftoverName reports whether full is "<owner>.new-<pid>-<random>" or
// "<guard>.stale-<pid>-<random>" of one of owners, as its writer names it.
func leftoverName(full string, owners map[string]bool) bool {
	for _, infix := range []string{TempSuffix + "-", GuardSuffix + "-"} {
		i := strings.LastIndex(full, infix)
		if i < 0 {
			continue
		}
		pidText, random, ok := strings.Cut(full[i+len(infix):], "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid < 0 || strconv.Itoa(pid) != pidText || random == "" || strings.ContainsAny(random, "-/") {
			continue
		}
		suffix := infix + pidText + "-" + random
		for owner, guard := range owners {
			if (infix == TempSuffix+"-" || guard) && Sidecar(owner, suffix) == full {
				return true
			}
		}
	}
	return false
}

// leftoverDead reports whether the leftover at full is a gone writer's.
func leftoverDead(p *platform.Platform, here *platform.Identity, full string) bool {
	seen, err := Read(p.FS, full)
	if err != nil {
		return false
	}
	switch seen.Kind {
	case Stamp:
		return here != nil && p.Process != nil &&
			platform.Judge(*here, seen.Stamp.Identity, p.Process.Lookup).Verdict == platform.Dead
	case Empty, Torn, SQLite:
		return Age(p, seen.ID, full, seen.Mtime) > MarkWindow
	}
	return false
}
