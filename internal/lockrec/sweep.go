package lockrec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/proclock/proclock/platform"
)

// Sweep removes the leftovers of crashed writers beside the lock at path:
// temporary files ("<name>.new-<pid>-<random>", CreateWhole) of the lock
// file, its mark and its guards, and guards set aside by a reclaimer
// ("<guard>.stale-<pid>-<random>"). It is called where a crash was just
// seen (a dead holder's stamp, mark or guard cleared), not on every
// acquisition: a listing of the directory is no cost for the hot path.
//
// A leftover is removed only once its writer is gone for certain: it holds
// a record whose holder is judged dead from here (here; nil judges no
// record), or it holds no record (empty, cut, the empty database) and was
// last written more than MarkWindow ago (Age): a live writer links or
// removes its temporary file at once. What holds anything else (a live or
// unjudgeable holder's record, a user's bytes), or is no regular file, or
// has a name that is none of these, is never touched. Failures are
// ignored: a leftover keeps no one out, and the next sweep tries again.
//
// A leftover's name is formed as its writer formed it (Sidecar): the
// directory part of path as path spells it, then the name listed. Joined
// with filepath.Join instead, "/tmp/app.lock" on windows (where "/" is a
// separator too, and a common one in Go programs) would list
// "\tmp\app.lock.new-..." and match no owner, and no leftover would go.
func Sweep(p *platform.Platform, here *platform.Identity, path string) {
	dir := filepath.Dir(path)
	prefix, _ := filepath.Split(path)
	d, err := p.FS.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	lister, ok := d.(interface{ Readdirnames(int) ([]string, error) })
	var names []string
	if ok {
		names, _ = lister.Readdirnames(-1)
	}
	d.Close()
	owners := sweepOwners(path)
	for _, name := range names {
		full := prefix + name
		if !leftoverName(full, owners) {
			continue
		}
		if leftoverDead(p, here, full) {
			p.FS.Remove(full)
		}
	}
}

// sweepOwners are the names whose temporary files and set-aside names a
// sweep of the lock (or guard) at path looks for, each with whether it may
// be set aside: a guard, by its reclaimer, or the lock at path itself
// (proclock sets no lock file aside; a guard is swept as a lock, from
// its reclaim).
func sweepOwners(path string) map[string]bool {
	owners := map[string]bool{path: true, MarkPath(path): false}
	g := path
	for range 3 { // the guards, as deep as guards go (stamplock's maxGuardDepth)
		g = Sidecar(g, GuardSuffix)
		owners[g] = true
	}
	return owners
}

// leftoverName reports whether full is the name of a temporary file, or of
// a guard set aside, of one of owners: "<owner>.new-<pid>-<random>" or
// "<guard>.stale-<pid>-<random>", exactly as the writer names it.
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
		suffix := fmt.Sprintf("%s%d-%s", infix, pid, random)
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
	if err != nil || errors.Is(err, fs.ErrNotExist) {
		return false
	}
	switch seen.Kind {
	case Stamp:
		if here == nil || p.Process == nil || !seen.Stamp.Known() {
			return false
		}
		return platform.Judge(*here, seen.Stamp.Identity, p.Process.Lookup).Verdict == platform.Dead
	case Empty, Torn, SQLite:
		return Age(p, seen.ID, full, seen.Mtime) > MarkWindow
	}
	return false
}
