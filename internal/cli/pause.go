package cli

// pauseEnv names the start-up step of proclock run at which a build with
// the proclockhooks tag stops for good, for a test to kill it there
// (pause_hooks.go, guard_steps_linux_test.go). The steps, in order:
// "launching" (COMMAND's guard is being started, the lock not yet
// taken), "locked" (the lock is held), "armed" (the guard's launcher is
// done), "started" (COMMAND was created, the guard not yet told), and
// "watched" (the guard has COMMAND's pidfd).
const pauseEnv = "PROCLOCK_TEST_PAUSE_AT"
