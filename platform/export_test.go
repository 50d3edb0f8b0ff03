package platform

// LauncherEnv and ParseLauncherPID are launcherEnv and parseLauncherPID,
// for tests.
const LauncherEnv = launcherEnv

var ParseLauncherPID = parseLauncherPID
