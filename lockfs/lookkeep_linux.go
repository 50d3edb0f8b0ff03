//go:build linux

package lockfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// OpenKeptLook is OpenLook for a look made again and again (KeptLooker).
// A look's descriptor is kept after Close, and a later look at the same
// name is given it, as a KeptFile, without a system call; KeptFile's
// StatName (or the File's first stat, which is StatName's) then tells
// whether the name still names that very file. The kept descriptor pins
// the file's inode, so its number cannot pass to another file while it is
// kept: an equal device and inode is the same file.
func (osFS) OpenKeptLook(name string) (File, error) {
	if !useStatx {
		return osFS{}.OpenLook(name)
	}
	if err := CheckPath("open", name); err != nil {
		return nil, err
	}
	if k := keptLooks.take(name); k != nil {
		f := &lookFile{fd: k.fd, name: name, keep: k}
		f.cleanup = runtime.AddCleanup(f, closeFd, k.fd)
		return f, nil
	}
	f, err := osFS{}.OpenLook(name)
	if err != nil {
		return nil, err
	}
	lf := f.(*lookFile)
	var stx unix.Statx_t
	if err := lf.control(func(fd uintptr) error {
		return retryEINTR(func() error { return unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, keptStatxMask, &stx) })
	}); err != nil {
		return lf, nil // Sight stats it again, and fails as a look does
	}
	info, id, key := keptOfStatx(name, &stx)
	lf.pre, lf.preID = info, id
	if info.Mode().IsRegular() {
		lf.keep = &keptLook{name: name, id: id, key: key}
	}
	return lf, nil
}

// Memo is what the look that gave the descriptor back left with it.
func (f *lookFile) Memo() any {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if k, ok := f.keep.(*keptLook); ok && f.fd >= 0 && k.reused {
		return k.memo
	}
	return nil
}

// SetMemo leaves v with the descriptor, for the next look given it.
func (f *lookFile) SetMemo(v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k, ok := f.keep.(*keptLook); ok && f.fd >= 0 {
		k.memo = v
	}
}

// StatName stats f's name, not following a symlink: same tells whether it
// still names f's file, unchanged in its owner, mode and change time.
func (f *lookFile) StatName() (info fs.FileInfo, id FileID, same bool, err error) {
	k, ok := f.keep.(*keptLook)
	if !ok {
		info, id, err = f.statID()
		return info, id, err == nil, err
	}
	var stx unix.Statx_t
	err = retryEINTR(func() error {
		return unix.Statx(unix.AT_FDCWD, f.name, unix.AT_SYMLINK_NOFOLLOW, keptStatxMask, &stx)
	})
	if err != nil {
		return nil, FileID{}, false, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	li, id, key := keptOfStatx(f.name, &stx)
	return li, id, id.SameOpen(k.id) && key == k.key, nil
}

// Forget closes f without keeping its descriptor.
func (f *lookFile) Forget() error {
	f.mu.Lock()
	f.keep = nil
	f.mu.Unlock()
	return f.Close()
}

// errKeptMoved says a kept descriptor's name names another file now, or
// the same one changed in who may open it.
var errKeptMoved = errors.New("lockfs: the name no longer names the kept look's file")

// keptStatxMask is what a kept look compares and tells: the basic stats
// (size, times, mode, owner, inode) and the birth time of the identity.
const keptStatxMask = unix.STATX_BASIC_STATS | unix.STATX_BTIME

// keptKey is what must not have changed for a kept descriptor to stand
// for a new open: whoever may open the file, and anything else of the
// inode's (a chmod, chown, ACL, link or write moves its change time).
type keptKey struct {
	mode     uint16
	uid, gid uint32
	ctime    unix.StatxTimestamp
}

func keptOfStatx(name string, stx *unix.Statx_t) (*lookInfo, FileID, keptKey) {
	info := &lookInfo{name: filepath.Base(name), size: int64(stx.Size), mode: modeOf(uint32(stx.Mode)),
		mtime: time.Unix(stx.Mtime.Sec, int64(stx.Mtime.Nsec))}
	return info, fileIDOfStatx(stx), keptKey{mode: stx.Mode, uid: stx.Uid, gid: stx.Gid, ctime: stx.Ctime}
}

// keptIdle is how long a kept descriptor stays unused before it is closed
// (it is closed between one and two of these after its last look): a file
// kept open keeps its filesystem from being unmounted, and a removed
// file's space from being freed.
const keptIdle = time.Second

// keptMax bounds the descriptors kept, the least recently given back
// closed first.
const keptMax = 4

// keptLooks holds the descriptors of the lately looked-at files.
var keptLooks keptSet

// keptLook is one kept descriptor, in the set or out with one look.
type keptLook struct {
	name   string
	fd     int
	id     FileID
	key    keptKey
	reused bool // given to a look after an earlier one's
	memo   any
	used   bool // looked at since the last sweep
}

func (k *keptLook) statName(f *lookFile) (fs.FileInfo, FileID, error) {
	if !k.reused {
		return f.statFd()
	}
	info, id, same, err := f.StatName()
	if err == nil && !same {
		err = &fs.PathError{Op: "stat", Path: f.name, Err: errKeptMoved}
	}
	return info, id, err
}

func (k *keptLook) giveBack(_ *lookFile, fd int) bool {
	if k.memo == nil {
		return false // kept only for a look that left what it learnt
	}
	k.fd, k.reused, k.used = fd, true, true
	return keptLooks.put(k)
}

type keptSet struct {
	mu    sync.Mutex
	looks []*keptLook // least recently given back first
	timer *time.Timer
	armed bool
}

// take removes name's kept descriptor from the set, for one look.
func (s *keptSet) take(name string) *keptLook {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range s.looks {
		if k.name == name {
			s.looks = append(s.looks[:i], s.looks[i+1:]...)
			return k
		}
	}
	return nil
}

// put keeps k, unless another look of its name was given back first.
func (s *keptSet) put(k *keptLook) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.looks {
		if o.name == k.name {
			return false
		}
	}
	if len(s.looks) == keptMax {
		unix.Close(s.looks[0].fd)
		s.looks = append(s.looks[:0], s.looks[1:]...)
	}
	s.looks = append(s.looks, k)
	if !s.armed {
		s.armed = true
		if s.timer == nil {
			s.timer = time.AfterFunc(keptIdle, s.sweep)
		} else {
			s.timer.Reset(keptIdle)
		}
	}
	return true
}

// sweep closes the descriptors no look used since the last sweep.
func (s *keptSet) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := s.looks[:0]
	for _, k := range s.looks {
		if !k.used {
			unix.Close(k.fd)
			continue
		}
		k.used = false
		left = append(left, k)
	}
	clear(s.looks[len(left):])
	s.looks = left
	s.armed = len(s.looks) > 0
	if s.armed {
		s.timer.Reset(keptIdle)
	}
}

// closeKeptLooks closes every descriptor kept by OpenKeptLook (tests that
// count descriptors).
func closeKeptLooks() {
	keptLooks.mu.Lock()
	defer keptLooks.mu.Unlock()
	for _, k := range keptLooks.looks {
		unix.Close(k.fd)
	}
	clear(keptLooks.looks)
	keptLooks.looks = keptLooks.looks[:0]
}
