package platform_test

import (
	"fmt"

	"github.com/proclock/proclock/platform"
)

// Judging a recorded holder from here: a holder whose pid is gone is dead,
// one on another host cannot be judged, and is left alone.
func ExampleJudge() {
	here := platform.Identity{Host: "build1", BootID: "b-7", PID: 100, StartTime: 5000}
	lookup := func(pid int) (platform.PIDInfo, error) {
		if pid == 4242 {
			return platform.PIDInfo{Exists: true, StartTime: 9000}, nil
		}
		return platform.PIDInfo{Exists: false}, nil
	}
	for _, holder := range []platform.Identity{
		{Host: "build1", BootID: "b-7", PID: 4242, StartTime: 9000}, // running
		{Host: "build1", BootID: "b-7", PID: 4242, StartTime: 8000}, // its pid was reused
		{Host: "build1", BootID: "b-7", PID: 777},                   // gone
		{Host: "build1", BootID: "b-6", PID: 4242},                  // an earlier boot
		{Host: "build2", PID: 777},                                  // another host
	} {
		j := platform.Judge(here, holder, lookup)
		fmt.Printf("%s (%s)\n", j.Verdict, j.Reason)
	}
	// Output:
	// alive (running)
	// dead (pid reused)
	// dead (pid gone)
	// dead (other boot)
	// unknown (other host)
}

// The platform of the running OS: its filesystem, and its identity of
// this process where the OS can tell it (Process.Self).
func ExampleNative() {
	p := platform.Native()
	fmt.Println(p.FS != nil)
	// Output: true
}
