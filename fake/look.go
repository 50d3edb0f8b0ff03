package fake

// What a process last saw of the lock's files, so that a wait begun after
// a change it did not see ends at once (procPlatform.Wait). Natively a
// waiter that misses such a change (it came between its try and its wait)
// finds it at its next try, d later; on a frozen clock that try would
// never come. linux's kept watch (wake.Watcher) sees such a change
// too; the fake world's waits keep no watch between them, and instead
// compare with what the process last looked at.
//
// A look is any operation of the process that resolves a name (an open, a
// stat, a remove...: what the name named once the operation was done), or
// an operation on the lock table of a file it has open (OpLock: whether
// another file held a lock on it, and how often its table has emptied).
// Looks are the process's, not a goroutine's: the fake cannot tell its
// goroutines apart, so one goroutine's look counts for all of them.

// lookKey is a name in a directory.
type lookKey struct {
	dir  *inode
	base string
}

// maxLooks bounds each of a process's tables of looks: past it, the looks
// of names that no longer name what they named, and at files that nobody
// names or has open, are dropped.
const maxLooks = 256

// looked notes, for the end of the operation under way, that a resolved
// base in dir. m.mu is held.
func (a *actor) looked(dir *inode, base string) {
	if a.proc != nil && dir != nil {
		a.pending = append(a.pending, lookKey{dir, base})
	}
}

// seen records the looks of the operation that just ended: what each name
// names now. m.mu is held.
func (a *actor) seen() {
	if a.proc == nil || len(a.pending) == 0 {
		return
	}
	p := a.proc
	for _, k := range a.pending {
		p.sawName(k)
	}
	a.pending = a.pending[:0]
}

// sawName records what k names now; a name that names nothing is
// forgotten: a name that comes and goes after a look that found it
// absent was never seen there. m.mu is held.
func (p *Process) sawName(k lookKey) {
	n := k.dir.entries[k.base]
	if n == nil {
		delete(p.lookNames, k)
		return
	}
	if p.lookNames == nil {
		p.lookNames = make(map[lookKey]*inode)
	}
	if len(p.lookNames) >= maxLooks {
		for old, was := range p.lookNames {
			if old.dir.entries[old.base] != was {
				delete(p.lookNames, old)
			}
		}
	}
	p.lookNames[k] = n
}

// sawLocks records a look at n's lock table through d: whether another
// file holds a lock on it, and then how often the table has emptied.
// m.mu is held.
func (p *Process) sawLocks(n *inode, d *description) {
	others := false
	for g := range n.locks {
		others = others || g != d
	}
	if !others {
		delete(p.lookLocks, n)
		return
	}
	if p.lookLocks == nil {
		p.lookLocks = make(map[*inode]uint64)
	}
	if len(p.lookLocks) >= maxLooks {
		for old := range p.lookLocks {
			if old.gone || len(old.locks) == 0 {
				delete(p.lookLocks, old)
			}
		}
	}
	p.lookLocks[n] = n.emptied
}

// missed reports whether, since p last looked, what one of names named in
// dir went away, or the file names[0] names, locked by another then, was
// let go by everyone (its lock table emptied). m.mu is held.
func (p *Process) missed(dir *inode, names []string) bool {
	for _, name := range names {
		if was, ok := p.lookNames[lookKey{dir, name}]; ok && dir.entries[name] != was {
			return true
		}
	}
	if len(names) == 0 {
		return false
	}
	if n := dir.entries[names[0]]; n != nil {
		if emptied, ok := p.lookLocks[n]; ok && n.emptied != emptied {
			return true
		}
	}
	return false
}

// told records that a wait of p's on names in dir ended telling of a
// change (WakeChange): it has seen the names as they are now, and what it
// last saw of the lock table of the file names[0] names is old news, for
// its next try to see again. So a waiter that was told, and waits again
// without trying (a herd's own moment, wait.go), is not woken by the
// table's emptying it was already told to look for; one that tries and
// finds the file still locked is (m.mu is held).
func (p *Process) told(dir *inode, names []string) {
	for _, name := range names {
		p.sawName(lookKey{dir, name})
	}
	if len(names) > 0 {
		if n := dir.entries[names[0]]; n != nil {
			delete(p.lookLocks, n)
		}
	}
}

// dropLock takes d's lock off n's lock table, counting the table's
// emptying. m.mu is held.
func dropLock(n *inode, d *description) {
	if _, ok := n.locks[d]; !ok {
		return
	}
	delete(n.locks, d)
	n.letGo()
	if len(n.locks) == 0 {
		n.emptied++
	}
}
