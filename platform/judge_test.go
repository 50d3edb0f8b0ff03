package platform_test

import (
	"errors"
	"testing"

	"github.com/proclock/proclock/platform"
)

// fakeLookup answers Judge's lookup from a table and counts its calls.
type fakeLookup struct {
	info  platform.PIDInfo
	err   error
	calls int
	pids  []int
}

func (f *fakeLookup) lookup(pid int) (platform.PIDInfo, error) {
	f.calls++
	f.pids = append(f.pids, pid)
	return f.info, f.err
}

func TestJudge(t *testing.T) {
	here := platform.Identity{Host: "h", BootID: "boot-1", PID: 100, StartTime: 5000, PIDNamespace: 4026531836}
	// holder is of this host, boot and namespace unless a case says otherwise.
	holder := func(edit func(*platform.Identity)) platform.Identity {
		id := platform.Identity{Host: "h", BootID: "boot-1", PID: 200, StartTime: 7000, PIDNamespace: 4026531836}
		if edit != nil {
			edit(&id)
		}
		return id
	}
	running := platform.PIDInfo{Exists: true, StartTime: 7000}
	errLookup := errors.New("lookup broke")

	tests := []struct {
		name    string
		here    platform.Identity // zero: here above
		holder  platform.Identity
		info    platform.PIDInfo
		err     error
		verdict platform.Verdict
		reason  platform.Reason
		calls   int // lookups expected (0 or 1)
	}{
		// The judge's table, row by row (docs/design.md).
		{
			name:    "other host",
			holder:  holder(func(id *platform.Identity) { id.Host = "elsewhere" }),
			info:    running,
			verdict: platform.Unknown, reason: platform.ReasonOtherHost,
		},
		{
			name:    "same host, both namespaces known and different",
			holder:  holder(func(id *platform.Identity) { id.PIDNamespace = 4026532000 }),
			info:    running,
			verdict: platform.Unknown, reason: platform.ReasonOtherNamespace,
		},
		{
			name:    "other boot",
			holder:  holder(func(id *platform.Identity) { id.BootID = "boot-0" }),
			info:    running,
			verdict: platform.Dead, reason: platform.ReasonOtherBoot,
		},
		{
			name:    "pid does not exist",
			holder:  holder(nil),
			info:    platform.PIDInfo{Exists: false},
			verdict: platform.Dead, reason: platform.ReasonPIDGone, calls: 1,
		},
		{
			name:    "pid exists, start time differs",
			holder:  holder(nil),
			info:    platform.PIDInfo{Exists: true, StartTime: 7001},
			verdict: platform.Dead, reason: platform.ReasonPIDReused, calls: 1,
		},
		{
			name:    "signal 0 answers EPERM: exists, start time hidden",
			holder:  holder(nil),
			info:    platform.PIDInfo{Exists: true, StartTime: 0},
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},
		{
			name:    "otherwise alive",
			holder:  holder(nil),
			info:    running,
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},

		// The order of the rows: the first that applies decides.
		{
			name: "other host wins over other boot and a dead pid",
			holder: holder(func(id *platform.Identity) {
				id.Host, id.BootID = "elsewhere", "boot-0"
			}),
			info:    platform.PIDInfo{Exists: false},
			verdict: platform.Unknown, reason: platform.ReasonOtherHost,
		},
		{
			name: "other boot wins over other namespace",
			holder: holder(func(id *platform.Identity) {
				id.PIDNamespace, id.BootID = 4026532000, "boot-0"
			}),
			info:    platform.PIDInfo{Exists: false},
			verdict: platform.Dead, reason: platform.ReasonOtherBoot,
		},

		// A reading that fails is never death.
		{
			name:    "lookup fails",
			holder:  holder(nil),
			err:     errLookup,
			verdict: platform.Alive, reason: platform.ReasonLookupFailed, calls: 1,
		},

		// Unknown fields are not compared.
		{
			name:    "legacy pid: no host, judged as this host, pid gone",
			holder:  platform.Identity{PID: 200},
			info:    platform.PIDInfo{Exists: false},
			verdict: platform.Dead, reason: platform.ReasonPIDGone, calls: 1,
		},
		{
			name:    "legacy pid: no host, judged as this host, running",
			holder:  platform.Identity{PID: 200},
			info:    platform.PIDInfo{Exists: true, StartTime: 123},
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},
		{
			name:    "holder start time 0 (another tool's stamp) is not compared",
			holder:  holder(func(id *platform.Identity) { id.StartTime = 0 }),
			info:    platform.PIDInfo{Exists: true, StartTime: 99999},
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},
		{
			name:    "only the holder's namespace known",
			here:    platform.Identity{Host: "h", BootID: "boot-1", PID: 100},
			holder:  holder(func(id *platform.Identity) { id.PIDNamespace = 4026532000 }),
			info:    platform.PIDInfo{Exists: false},
			verdict: platform.Dead, reason: platform.ReasonPIDGone, calls: 1,
		},
		{
			name:    "only this process's namespace known",
			holder:  holder(func(id *platform.Identity) { id.PIDNamespace = 0 }),
			info:    running,
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},
		{
			name:    "holder boot id unknown",
			holder:  holder(func(id *platform.Identity) { id.BootID = "" }),
			info:    platform.PIDInfo{Exists: true, StartTime: 1},
			verdict: platform.Dead, reason: platform.ReasonPIDReused, calls: 1,
		},
		{
			name:    "this process's boot id unknown",
			here:    platform.Identity{Host: "h", PID: 100, PIDNamespace: 4026531836},
			holder:  holder(nil),
			info:    running,
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},

		// Time namespaces: start times are on the host's clock, and one
		// apart where either side read through an offset boot clock.
		{
			name:    "other time namespace, same start on the host's clock",
			holder:  holder(func(id *platform.Identity) { id.TimeNamespace, id.BootOffset = 4026532177, 100000e9 }),
			info:    running,
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},
		{
			name:    "holder's offset clock: one tick late is the same start",
			holder:  holder(func(id *platform.Identity) { id.StartTime, id.BootOffset = 7001, 5e6 }),
			info:    running,
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},
		{
			name:    "this process's offset clock: one tick late is the same start",
			here:    platform.Identity{Host: "h", BootID: "boot-1", PID: 100, PIDNamespace: 4026531836, BootOffset: -5e6},
			holder:  holder(nil),
			info:    platform.PIDInfo{Exists: true, StartTime: 7001},
			verdict: platform.Alive, reason: platform.ReasonRunning, calls: 1,
		},
		{
			name:    "offset clock, two apart: reused",
			holder:  holder(func(id *platform.Identity) { id.StartTime, id.BootOffset = 7002, 5e6 }),
			info:    running,
			verdict: platform.Dead, reason: platform.ReasonPIDReused, calls: 1,
		},
		{
			name:    "no offset clock, one apart: reused",
			holder:  holder(func(id *platform.Identity) { id.StartTime = 6999 }),
			info:    running,
			verdict: platform.Dead, reason: platform.ReasonPIDReused, calls: 1,
		},
		{
			// No process has pid 0 or less, and a lookup must never signal
			// it (kill(0) and kill(-1) name process groups).
			name:    "holder pid 0",
			holder:  holder(func(id *platform.Identity) { id.PID = 0 }),
			info:    running,
			verdict: platform.Dead, reason: platform.ReasonPIDGone,
		},
		{
			name:    "holder pid negative",
			holder:  holder(func(id *platform.Identity) { id.PID = -1 }),
			info:    running,
			verdict: platform.Dead, reason: platform.ReasonPIDGone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			me := tt.here
			if me == (platform.Identity{}) {
				me = here
			}
			f := &fakeLookup{info: tt.info, err: tt.err}
			got := platform.Judge(me, tt.holder, f.lookup)
			if got.Verdict != tt.verdict || got.Reason != tt.reason {
				t.Errorf("Judge = %v (%s), want %v (%s)", got.Verdict, got.Reason, tt.verdict, tt.reason)
			}
			if f.calls != tt.calls {
				t.Errorf("lookup called %d times, want %d", f.calls, tt.calls)
			}
			for _, pid := range f.pids {
				if pid != tt.holder.PID {
					t.Errorf("lookup(%d), want lookup(%d)", pid, tt.holder.PID)
				}
			}
			switch {
			case tt.err != nil && !errors.Is(got.Err, tt.err):
				t.Errorf("Judgement.Err = %v, want %v", got.Err, tt.err)
			case tt.err == nil && got.Err != nil:
				t.Errorf("Judgement.Err = %v, want nil", got.Err)
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	tests := []struct {
		v    platform.Verdict
		want string
	}{
		{platform.Alive, "alive"},
		{platform.Dead, "dead"},
		{platform.Unknown, "unknown"},
		{platform.Verdict(42), "Verdict(?)"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("Verdict(%d).String() = %q, want %q", int(tt.v), got, tt.want)
		}
	}
}

func TestParseLauncherPID(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"4240", 4240},
		{"1", 1},
		{"0", 0},
		{"-5", 0},
		{"", 0},
		{"x", 0},
		{"4240x", 0},
		{"12.0", 0},
		// Not trimmed: whatever set the variable meant something else
		// than a bare pid, and the value is only diagnostic.
		{" 12", 0},
		{"12 ", 0},
		{"12\n", 0},
		// strconv's reading of decimal: a plus sign and leading zeros
		// still name a positive integer.
		{"+12", 12},
		{"0012", 12},
		{"99999999999999999999", 0}, // out of range
	}
	for _, tt := range tests {
		if got := platform.ParseLauncherPID(tt.in); got != tt.want {
			t.Errorf("ParseLauncherPID(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
