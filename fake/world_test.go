package fake_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// lookupFrom returns p's Lookup, as platform.Judge takes it.
func lookupFrom(p *fake.Process) func(int) (platform.PIDInfo, error) {
	return p.Platform().Process.Lookup
}

func self(t *testing.T, p *fake.Process) platform.Identity {
	t.Helper()
	id, err := p.Platform().Process.Self()
	if err != nil {
		t.Fatalf("Self of pid %d: %v", p.PID(), err)
	}
	return id
}

func TestSpawnGivesFreshPIDsAndStartTimes(t *testing.T) {
	w := fake.New()
	seen := make(map[uint64]bool)
	for i, want := range []int{100, 101, 102} {
		p := w.Spawn()
		if p.PID() != want {
			t.Errorf("process %d: pid %d, want %d", i, p.PID(), want)
		}
		id := self(t, p)
		if id != p.Identity() {
			t.Errorf("Self %+v, Identity %+v", id, p.Identity())
		}
		if id.Host != "fakehost" || id.BootID == "" || id.PID != want || id.PIDNamespace == 0 || id.StartTime == 0 {
			t.Errorf("identity %+v: want host fakehost, a boot id, pid %d, a namespace and a start time", id, want)
		}
		if seen[id.StartTime] {
			t.Errorf("start time %d given twice", id.StartTime)
		}
		seen[id.StartTime] = true
	}
}

func TestPlatformHoldsOneFSPerProcess(t *testing.T) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	pa1, pa2, pb := a.Platform(), a.Platform(), b.Platform()
	if pa1.FS != pa2.FS {
		t.Error("one process got two FS values")
	}
	if pa1.FS == pb.FS || pa1.FS == w.FS() {
		t.Error("two processes (or a process and the world) share an FS value")
	}
	if pa1.Process != pa2.Process || pa1.Clock != pa2.Clock || pa1.SQLite != pa2.SQLite {
		t.Error("one process got two Process, Clock or SQLite values")
	}
	if pa1.SQLite == pb.SQLite {
		t.Error("two processes share an SQLite value")
	}
	if pa1 == pa2 {
		t.Error("Platform returned the same *Platform twice; callers may change it")
	}
}

func TestLookup(t *testing.T) {
	w := fake.New()
	asker := w.Spawn()
	alive := w.Spawn()
	dead := w.Spawn()
	dead.Kill()
	reused := w.Spawn()
	old := reused.Identity()
	reused.Kill()
	successor, err := w.SpawnPID(old.PID)
	if err != nil {
		t.Fatalf("SpawnPID(%d) after Kill: %v", old.PID, err)
	}
	here := self(t, asker)

	tests := []struct {
		name        string
		holder      platform.Identity
		wantExists  bool
		wantStart   uint64
		wantVerdict platform.Verdict
		wantReason  platform.Reason
	}{
		{"alive", alive.Identity(), true, alive.Identity().StartTime, platform.Alive, platform.ReasonRunning},
		{"dead pid", dead.Identity(), false, 0, platform.Dead, platform.ReasonPIDGone},
		{"pid reused", old, true, successor.Identity().StartTime, platform.Dead, platform.ReasonPIDReused},
		{"never used", platform.Identity{Host: "fakehost", PID: 4242}, false, 0, platform.Dead, platform.ReasonPIDGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := lookupFrom(asker)(tt.holder.PID)
			if err != nil {
				t.Fatalf("Lookup(%d): %v", tt.holder.PID, err)
			}
			if info.Exists != tt.wantExists || info.StartTime != tt.wantStart {
				t.Errorf("Lookup(%d) = %+v, want Exists %v StartTime %d", tt.holder.PID, info, tt.wantExists, tt.wantStart)
			}
			j := platform.Judge(here, tt.holder, lookupFrom(asker))
			if j.Verdict != tt.wantVerdict || j.Reason != tt.wantReason {
				t.Errorf("Judge = %v (%s), want %v (%s)", j.Verdict, j.Reason, tt.wantVerdict, tt.wantReason)
			}
		})
	}
	if old.StartTime == successor.Identity().StartTime {
		t.Error("a reused pid kept its start time")
	}
}

func TestSpawnPIDRefusesALivePID(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	if _, err := w.SpawnPID(p.PID()); err == nil {
		t.Errorf("SpawnPID of a live pid: no error")
	}
	if _, err := w.SpawnPID(0); err == nil {
		t.Error("SpawnPID(0) succeeded")
	}
	q, err := w.SpawnPID(500)
	if err != nil || q.PID() != 500 {
		t.Fatalf("SpawnPID(500) = %v, %v", q, err)
	}
	if r := w.Spawn(); r.PID() == 500 {
		t.Error("Spawn handed out a pid in use")
	}
}

func TestRebootBringsANewBootAndKillsEveryone(t *testing.T) {
	w := fake.New()
	ns := w.NewPIDNamespace()
	p, inNS := w.Spawn(), ns.Spawn()
	before := p.Identity()
	f, err := p.FS().OpenFile("/tmp/held", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}

	w.Reboot()

	if p.Alive() || inNS.Alive() {
		t.Error("a process survived its host's reboot")
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, fake.ErrKilled) {
		t.Errorf("write by a process of the last boot: %v, want ErrKilled", err)
	}
	if w.OpenFiles() != 0 {
		t.Errorf("%d files open after Reboot", w.OpenFiles())
	}
	q, inNSAfter := w.Spawn(), ns.Spawn()
	if q.PID() != before.PID {
		t.Errorf("first pid after Reboot %d, want %d again", q.PID(), before.PID)
	}
	if after, afterNS := q.Identity(), inNSAfter.Identity(); after.BootID == before.BootID || afterNS.BootID != after.BootID {
		t.Errorf("boot ids after Reboot: host %q, namespace %q, before %q", after.BootID, afterNS.BootID, before.BootID)
	}
	j := platform.Judge(self(t, q), before, lookupFrom(q))
	if j.Verdict != platform.Dead || j.Reason != platform.ReasonOtherBoot {
		t.Errorf("Judge of a holder of the last boot = %v (%s), want dead (other boot)", j.Verdict, j.Reason)
	}
	if _, err := w.Stat("/tmp/held"); err != nil {
		t.Errorf("the filesystem lost a file in a reboot: %v", err)
	}
}

func TestHostsAndNamespacesShareOneFS(t *testing.T) {
	w := fake.New()
	other := w.NewHost("otherhost")
	ns := w.NewPIDNamespace()
	a, b, c := w.Spawn(), other.Spawn(), ns.Spawn()

	if err := writeFile(a.FS(), "/tmp/shared", []byte("from a"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*fake.Process{b, c} {
		got, err := readFile(p.FS(), "/tmp/shared")
		if err != nil || string(got) != "from a" {
			t.Errorf("pid %d read %q, %v; want %q", p.PID(), got, err, "from a")
		}
	}

	ia, ib, ic := a.Identity(), b.Identity(), c.Identity()
	if ia.PID != ib.PID || ia.PID != ic.PID {
		t.Errorf("pids %d, %d, %d: each table should start at the same pid", ia.PID, ib.PID, ic.PID)
	}
	if ib.Host != "otherhost" || ib.BootID == ia.BootID {
		t.Errorf("other host's identity %+v shares host or boot with %+v", ib, ia)
	}
	if ic.Host != ia.Host || ic.BootID != ia.BootID || ic.PIDNamespace == ia.PIDNamespace {
		t.Errorf("namespace identity %+v, want same host and boot as %+v, another namespace", ic, ia)
	}

	tests := []struct {
		name   string
		judge  *fake.Process
		holder platform.Identity
		reason platform.Reason
	}{
		{"other host", a, ib, platform.ReasonOtherHost},
		{"other namespace", c, ia, platform.ReasonOtherNamespace},
	}
	for _, tt := range tests {
		j := platform.Judge(self(t, tt.judge), tt.holder, lookupFrom(tt.judge))
		if j.Verdict != platform.Unknown || j.Reason != tt.reason {
			t.Errorf("%s: Judge = %v (%s), want unknown (%s)", tt.name, j.Verdict, j.Reason, tt.reason)
		}
	}

	// The same pid names another process in each namespace.
	a.Kill()
	info, err := lookupFrom(c)(ia.PID)
	if err != nil || !info.Exists || info.StartTime != ic.StartTime {
		t.Errorf("namespace's Lookup(%d) after the root's pid died = %+v, %v; want its own process", ia.PID, info, err)
	}
	if info, _ := lookupFrom(w.Spawn())(ia.PID); info.Exists {
		t.Errorf("root namespace still sees its dead pid %d", ia.PID)
	}
}

func TestFailIdentity(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	denied := errors.New("sandbox denies /proc")
	p.FailIdentity(denied)
	if _, err := p.Platform().Process.Self(); !errors.Is(err, denied) {
		t.Errorf("Self after FailIdentity: %v, want %v", err, denied)
	}
	p.FailIdentity(nil)
	if id := self(t, p); id.PID != p.PID() {
		t.Errorf("Self after restoring = %+v", id)
	}
}

func TestKillClosesFilesAndStopsEverything(t *testing.T) {
	w := fake.New()
	p, other := w.Spawn(), w.Spawn()
	pfs := p.FS()
	f, err := pfs.OpenFile("/tmp/a", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := pfs.OpenFile("/tmp", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Reachable until Kill: a dropped handle may be closed by the collector.
	defer runtime.KeepAlive(dir)
	kept, err := other.FS().OpenFile("/tmp/b", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if w.OpenFiles() != 3 || p.OpenFiles() != 2 {
		t.Fatalf("open files: world %d, process %d; want 3 and 2", w.OpenFiles(), p.OpenFiles())
	}

	p.Kill()
	p.Kill() // harmless

	if p.Alive() {
		t.Error("Alive after Kill")
	}
	if w.OpenFiles() != 1 || p.OpenFiles() != 0 {
		t.Errorf("open files after Kill: world %d, process %d; want 1 and 0", w.OpenFiles(), p.OpenFiles())
	}
	if _, err := kept.Write([]byte("still here")); err != nil {
		t.Errorf("another process's file: %v", err)
	}

	ops := []struct {
		name string
		do   func() error
	}{
		{"Create", func() error { _, err := pfs.OpenFile("/tmp/c", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666); return err }},
		{"Lstat", func() error { _, err := pfs.Lstat("/tmp/a"); return err }},
		{"Remove", func() error { return pfs.Remove("/tmp/a") }},
		{"Rename", func() error { return pfs.Rename("/tmp/a", "/tmp/z") }},
		{"Link", func() error { return pfs.Link("/tmp/a", "/tmp/z") }},
		{"FileID", func() error { _, err := pfs.FileID("/tmp/a"); return err }},
		{"File.Write", func() error { _, err := f.Write([]byte("x")); return err }},
		{"File.Read", func() error { _, err := f.Read(make([]byte, 1)); return err }},
		{"File.Close", f.Close},
		{"Sleep", func() error { return p.Platform().Clock.Sleep(context.Background(), 1) }},
		{"Lookup", func() error { _, err := lookupFrom(p)(other.PID()); return err }},
	}
	for _, op := range ops {
		err := op.do()
		if !errors.Is(err, fake.ErrKilled) {
			t.Errorf("%s by a killed process: %v, want ErrKilled", op.name, err)
		}
	}
	for _, name := range []string{"/tmp/a", "/tmp/z", "/tmp/c"} {
		_, err := w.Stat(name)
		if exists := err == nil; exists != (name == "/tmp/a") {
			t.Errorf("%s exists: %v; a killed process changed the filesystem", name, exists)
		}
	}
	var pe *fs.PathError
	if _, err := pfs.Lstat("/tmp/a"); !errors.As(err, &pe) || pe.Op != "lstat" {
		t.Errorf("a killed process's Lstat error %v is not a *fs.PathError naming lstat", err)
	}
	var le *os.LinkError
	if err := pfs.Rename("/tmp/a", "/tmp/z"); !errors.As(err, &le) {
		t.Errorf("a killed process's Rename error %v is not a *os.LinkError", err)
	}
	if id := self(t, p); id != p.Identity() {
		t.Errorf("Self of the dead = %+v, want its identity", id)
	}
}

func TestFileIDOfRefusesForeignFiles(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	elsewhere, err := fake.New().FS().OpenFile("/tmp/x", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := struct{ lockfs.File }{elsewhere} // a File of no fake world
	for _, f := range []lockfs.File{wrapped, elsewhere, nil} {
		if _, err := p.FS().FileIDOf(f); !errors.Is(err, lockfs.ErrNoFileID) {
			t.Errorf("FileIDOf(%T): %v, want ErrNoFileID", f, err)
		}
	}
	own, err := p.FS().OpenFile("/tmp/own", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	byHandle, err := w.FS().FileIDOf(own)
	if err != nil {
		t.Fatalf("FileIDOf a file of this world opened by another view: %v", err)
	}
	byName, err := p.FS().FileID("/tmp/own")
	if err != nil || !byHandle.Same(byName) {
		t.Errorf("FileID %+v, %v; FileIDOf %+v: want the same file", byName, err, byHandle)
	}
}
