package platform

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Darwin tells a process's start time and state through sysctl
// kern.proc.pid.<pid>, and names each boot with kern.bootsessionuuid.

// stateZombie is SZOMB (<sys/proc.h>).
const stateZombie = 5

func readSelf() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("platform: host name: %w", err)
	}
	boot, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return Identity{}, fmt.Errorf("platform: sysctl kern.bootsessionuuid: %w", err)
	}
	pid := os.Getpid()
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return Identity{}, fmt.Errorf("platform: sysctl kern.proc.pid.%d: %w", pid, err)
	}
	return Identity{Host: host, BootID: boot, PID: pid, StartTime: startMicros(kp)}, nil
}

func lookupPID(pid int) (PIDInfo, error) {
	exists, err := signalZero(pid)
	if err != nil || !exists {
		return PIDInfo{}, err
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		// Nothing for a pid gone (x/sys says EIO): it may have died
		// since the signal.
		exists, err := signalZero(pid)
		return PIDInfo{Exists: exists}, err
	}
	if kp.Proc.P_stat == stateZombie {
		// A zombie holds no file and never will.
		return PIDInfo{}, nil
	}
	return PIDInfo{Exists: true, StartTime: startMicros(kp)}, nil
}

// startMicros gives p_starttime (a timeval) in microseconds since the epoch.
func startMicros(kp *unix.KinfoProc) uint64 {
	t := kp.Proc.P_starttime
	return uint64(t.Sec)*1e6 + uint64(t.Usec)
}
