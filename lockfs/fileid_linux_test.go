package lockfs

import (
	"os"
	"testing"
)

func TestStatFallbackAgreesWithStatx(t *testing.T) {
	if !useStatx {
		t.Skip("statx is not used on this system")
	}
	dir := t.TempDir()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	withStatx := fileIDs(t, dir, f)
	useStatx = false
	defer func() { useStatx = true }()
	withStat := fileIDs(t, dir, f)

	for i := range withStat {
		// Without statx the device and inode must read the same, so that one
		// process never compares identities of two encodings.
		if withStat[i].Dev != withStatx[i].Dev || withStat[i].Ino != withStatx[i].Ino {
			t.Errorf("stat gives %+v, statx %+v", withStat[i], withStatx[i])
		}
		if withStat[i].HasBirth {
			t.Errorf("stat cannot know a birth time, got %+v", withStat[i])
		}
	}
}

// fileIDs identifies dir by name and through f, its open directory.
func fileIDs(t *testing.T, dir string, f *os.File) [2]FileID {
	t.Helper()
	byName, err := fileIDByName(dir)
	if err != nil {
		t.Fatal(err)
	}
	byFile, err := fileIDOfOS(f)
	if err != nil {
		t.Fatal(err)
	}
	return [2]FileID{byName, byFile}
}
