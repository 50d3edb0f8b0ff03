package platform

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// stillActive is STILL_ACTIVE (minwinbase.h), the exit code of a process
// that runs.
const stillActive = 259

func readSelf() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("platform: host name: %w", err)
	}
	start, err := creationTime(windows.CurrentProcess())
	if err != nil {
		return Identity{}, fmt.Errorf("platform: process start time: %w", err)
	}
	return Identity{Host: host, BootID: bootID(), PID: os.Getpid(), StartTime: start}, nil
}

func lookupPID(pid int) (PIDInfo, error) {
	if uint64(pid) > math.MaxUint32 {
		return PIDInfo{}, nil // no process has an id wider than a DWORD
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	switch {
	case errors.Is(err, windows.ERROR_INVALID_PARAMETER):
		return PIDInfo{}, nil // no such process
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return PIDInfo{Exists: true}, nil // exists, not ours to query
	case err != nil:
		return PIDInfo{}, fmt.Errorf("platform: open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return PIDInfo{}, fmt.Errorf("platform: exit code of process %d: %w", pid, err)
	}
	if code != stillActive {
		// Exited, its id kept by an open handle as a zombie's is. One
		// that exited with code 259 looks alive: the safe mistake.
		return PIDInfo{}, nil
	}
	start, err := creationTime(h)
	if err != nil {
		return PIDInfo{Exists: true}, nil // exists; only its start is unknown
	}
	return PIDInfo{Exists: true, StartTime: start}, nil
}

// creationTime returns when the process of h was created, as a FILETIME.
func creationTime(h windows.Handle) (uint64, error) {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, err
	}
	return uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime), nil
}

// systemTimeOfDay is SYSTEM_TIMEOFDAY_INFORMATION, as the Windows Research
// Kernel and phnt's ntexapi.h lay it out: BootTimeBias sums every change
// ever made to BootTime.
type systemTimeOfDay struct {
	BootTime      int64 // FILETIME units, moved by every clock change
	CurrentTime   int64
	TimeZoneBias  int64
	TimeZoneID    uint32
	Reserved      uint32
	BootTimeBias  uint64 // how far BootTime has been moved since boot
	SleepTimeBias uint64
}

// bootID names this boot by BootTime - BootTimeBias, as the kernel does
// for ETW: a clock change moves both alike. The fields are read without a
// lock, so two readings in a row must agree.
func bootID() string {
	for range 3 {
		if a, b := bootTime(), bootTime(); a != 0 && a == b {
			return formatFiletime(a)
		}
	}
	return ""
}

// bootTime returns BootTime - BootTimeBias in FILETIME units; 0 when
// unknown.
func bootTime() uint64 {
	var info systemTimeOfDay
	err := windows.NtQuerySystemInformation(windows.SystemTimeOfDayInformation,
		unsafe.Pointer(&info), uint32(unsafe.Sizeof(info)), nil)
	if err != nil || info.BootTime <= 0 {
		return 0
	}
	return uint64(info.BootTime) - info.BootTimeBias
}

// formatFiletime writes a FILETIME as a UTC time with all its digits.
func formatFiletime(ft uint64) string {
	const unixEpoch = 116444736000000000 // 1970-01-01 in FILETIME units
	t := time.Unix(0, 0).UTC().Add(time.Duration(int64(ft)-unixEpoch) * 100)
	return t.Format("2006-01-02T15:04:05.0000000Z")
}
