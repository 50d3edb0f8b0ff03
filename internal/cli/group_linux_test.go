package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestRunGroupShared: two users of one group, umask 002, share a lock in a
// setgid directory through the command, both ways, both mechanisms: held
// means exit 1 naming the holder; free means the other takes it
// (docs/security.md, "A lock shared by a group").
func TestRunGroupShared(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run proclock as two other users")
	}
	defer syscall.Umask(syscall.Umask(0o002))
	const gid = 64100
	users := []*syscall.Credential{{Uid: 64101, Gid: gid, Groups: []uint32{gid}}, {Uid: 64102, Gid: gid, Groups: []uint32{gid}}}
	shared := sharedBinary(t)
	as := func(cred *syscall.Credential, args ...string) *running {
		cmd := proclockCmd(args)
		cmd.Path, cmd.Args[0] = shared, shared
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return start(t, cmd)
	}
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			dir := filepath.Join(sharedDir(t), "shared")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 0, gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o775|os.ModeSetgid); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "x.lock")
			for _, first := range []int{0, 1, 0} {
				a, b := users[first], users[1-first]
				holder := as(a, "run", "--mechanism", mech, path, "--", "sh", "-c", "echo started; exec cat")
				holder.expectLine("started")
				pid := "pid " + strconv.Itoa(holder.cmd.Process.Pid) + " "
				res := as(b, "run", "-n", "--mechanism", mech, path, "--", "true").wait()
				if res.code != exitHeld || !strings.Contains(res.stderr, pid) {
					t.Errorf("uid %d while uid %d holds: exit %d, %q; want exit 1 naming %s", b.Uid, a.Uid, res.code, res.stderr, pid)
				}
				holder.release()
				if res := as(b, "run", "-n", "--mechanism", mech, path, "--", "true").wait(); res.code != 0 {
					t.Errorf("uid %d once uid %d let go: exit %d, %q; want it taken", b.Uid, a.Uid, res.code, res.stderr)
				}
			}
		})
	}
}
