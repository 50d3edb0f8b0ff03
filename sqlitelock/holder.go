package sqlitelock

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// HolderSuffix names the file beside the lock that tells who holds it.
const HolderSuffix = ".holder"

// holderFormat marks a .holder file written by proclock.
const holderFormat = "proclock/1"

// maxHolderSize bounds how much of a .holder file is read.
const maxHolderSize = 64 << 10

// HolderFileMode is the mode .holder files are created with.
const HolderFileMode fs.FileMode = 0o644

// Record is what a .holder file says: the holder's identity and when it
// took the lock.
type Record struct {
	Format string `json:"format"`
	platform.Identity
	AcquiredAt time.Time `json:"acquiredAt"`
}

// recordHolder writes .holder for self, or, when self is unknown, removes
// one left by a holder that died: the lock is held, so any .holder there is
// not a live holder's.
func (l *Lock) recordHolder(p *platform.Platform, self *platform.Identity) error {
	name := l.path + HolderSuffix
	if self == nil {
		if err := p.FS.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	data, _ := json.Marshal(Record{Format: holderFormat, Identity: *self, AcquiredAt: p.Time().Now()})
	if err := writeWhole(p.FS, name, append(data, '\n')); err != nil {
		return err
	}
	l.holder = true
	return nil
}

// writeWhole writes data to name through a new temporary file and a
// rename, so that readers see all of it or none, and a symlink at name is
// replaced, never followed.
func writeWhole(fsys lockfs.FS, name string, data []byte) error {
	tmp := name + ".tmp-" + rand.Text()
	f, err := fsys.OpenFile(tmp, lockfs.CreateExcl, HolderFileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		fsys.Remove(tmp)
	}
	return err
}

// ReadHolder returns what the .holder file of the lock at path says, or
// nil when it is missing, unreadable or not proclock's: it is for
// diagnostics, and never an error.
func ReadHolder(fsys lockfs.FS, path string) *Record {
	f, err := fsys.OpenNoFollow(path + HolderSuffix)
	if err != nil {
		return nil
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxHolderSize+1))
	if err != nil || len(data) > maxHolderSize {
		return nil
	}
	return ParseHolder(data)
}

// ParseHolder parses a .holder file's bytes; nil when they are not a
// proclock record with a pid.
func ParseHolder(data []byte) *Record {
	var r Record
	if json.Unmarshal(data, &r) != nil || r.Format != holderFormat || r.PID <= 0 {
		return nil
	}
	return &r
}
