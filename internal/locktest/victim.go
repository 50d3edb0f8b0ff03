package locktest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Victim is a file an attacker points a symlink at: a lock must never
// write through the link, so its bytes and mtime must never change.
type Victim struct {
	Path  string
	data  []byte
	mtime time.Time
}

// NewVictim writes a victim file in dir.
func NewVictim(t testing.TB, dir string) Victim {
	t.Helper()
	v := Victim{Path: filepath.Join(dir, "victim"), data: []byte("precious: never written by a lock\n"), mtime: time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)}
	if err := os.WriteFile(v.Path, v.data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(v.Path, v.mtime, v.mtime); err != nil {
		t.Fatal(err)
	}
	return v
}

// Check fails t unless the victim is the same regular file, byte for byte,
// with its old mtime.
func (v Victim) Check(t testing.TB) {
	t.Helper()
	got, err := os.ReadFile(v.Path)
	if err != nil {
		t.Fatalf("victim: %v", err)
	}
	info, err := os.Lstat(v.Path)
	if err != nil {
		t.Fatalf("victim: %v", err)
	}
	if !bytes.Equal(got, v.data) || !info.ModTime().Equal(v.mtime) || !info.Mode().IsRegular() {
		t.Fatalf("victim written through a symlink: %q, mtime %v, mode %v; want %q, %v", got, info.ModTime(), info.Mode(), v.data, v.mtime)
	}
}
