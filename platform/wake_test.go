package platform_test

import (
	"runtime"
	"testing"

	"github.com/proclock/proclock/platform"
)

// Native has a wake-up source where one is built (linux), and none
// elsewhere, where waits sleep on the clock.
func TestNativeWake(t *testing.T) {
	got := platform.Native().Wake != nil
	if want := runtime.GOOS == "linux"; got != want {
		t.Errorf("Native().Wake set: %v; want %v on %s", got, want, runtime.GOOS)
	}
}

func TestWakeupString(t *testing.T) {
	for w, want := range map[platform.Wakeup]string{
		platform.WakeTimeout: "timeout",
		platform.WakeChange:  "change",
		platform.WakeExit:    "exit",
		platform.Wakeup(9):   "Wakeup(9)",
	} {
		if got := w.String(); got != want {
			t.Errorf("Wakeup(%d).String() = %q; want %q", int(w), got, want)
		}
	}
}
