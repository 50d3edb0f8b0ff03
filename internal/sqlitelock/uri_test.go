package sqlitelock

import (
	"runtime"
	"testing"
)

// A lock's path becomes a URI whose path the VFS opens as the same file:
// URI syntax escaped, a windows drive letter first, UNC slashes kept.
func TestFileURI(t *testing.T) {
	tests := []struct{ path, want string }{
		{"app.lock", "file:app.lock?mode=rw"},
		{"dir/a%b?c#d", "file:dir/a%25b%3Fc%23d?mode=rw"},
	}
	if runtime.GOOS == "windows" {
		tests = append(tests, []struct{ path, want string }{
			{`C:\Users\me\app.lock`, "file:C:/Users/me/app.lock?mode=rw"},
			{`C:rel\app.lock`, "file:C:rel/app.lock?mode=rw"},
			{`\\host\share\app.lock`, "file:////host/share/app.lock?mode=rw"},
			{`\rooted\app.lock`, "file:///rooted/app.lock?mode=rw"},
		}...)
	} else {
		tests = append(tests, []struct{ path, want string }{
			{"/tmp/app.lock", "file:///tmp/app.lock?mode=rw"},
			{"//tmp/app.lock", "file:////tmp/app.lock?mode=rw"},
		}...)
	}
	for _, tc := range tests {
		if got := fileURI(tc.path, false); got != tc.want {
			t.Errorf("fileURI(%q) = %q; want %q", tc.path, got, tc.want)
		}
	}
	if got, want := fileURI("app.lock", true), "file:app.lock?mode=ro"; got != want {
		t.Errorf("read-only: fileURI = %q; want %q", got, want)
	}
}
