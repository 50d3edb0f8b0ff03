package cli

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// canStartProcesses: proclock run can start COMMAND here.
const canStartProcesses = true

// startTied starts cmd inside a job object that kills its processes when
// its last handle closes, which happens when proclock exits, however it
// exits. A process COMMAND starts before it joins the job (a moment after
// its start) escapes it; the ones it starts later are in the job too.
func startTied(cmd *exec.Cmd, warn io.Writer) (<-chan error, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := joinKillJob(uint32(cmd.Process.Pid)); err != nil {
		fmt.Fprintf(warn, "proclock: warning: COMMAND may outlive proclock: job object: %v\n", err)
	}
	return waitInBackground(cmd), nil
}

// killJob is the job object of this process's COMMANDs. Its handle is
// never closed by hand: the system closes it when proclock exits.
var killJob = sync.OnceValues(func() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	_, err = windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	if err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
})

// joinKillJob puts the process pid into killJob. The pid cannot name
// another process meanwhile: os/exec holds a handle to COMMAND's process.
func joinKillJob(pid uint32) error {
	job, err := killJob()
	if err != nil {
		return err
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}
