package proclock_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
)

// TestForeignFileAtMarkKept: a user's file at the mark's name
// ("<path>.holder"), which no proclock process and no seed wrote, keeps its
// bytes, its type and its inode whatever its age, on either mechanism
// (docs/protocol.md, "Judging what is there"). A SQLite process cannot
// leave its mark there, so it refuses with an error matching
// ErrNotLockFile, naming the mark; a file process, which never removes a
// mark, reads a foreign mark as held for 30 s after its mtime, as a mark
// being written, and as absent after. A SQLite process removed a text file
// there 30 s after its mtime, and a FIFO, a device or an empty directory at
// once, taking them for a crashed writer's mark.
func TestForeignFileAtMarkKept(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		mode    fs.FileMode // a node or a directory instead of a file
	}{
		{name: "text", content: "remember to water the plants\n"},
		{name: "shell script", content: "#!/bin/sh\necho working\n"},
		{name: "json without pid", content: `{"name":"config","debug":true}`},
		{name: "brace then garbage", content: "{ this is not json, but it starts like it"},
		{name: "another tool's cut record", content: `{"host":"h","pid":12,"acq`},
		{name: "binary", content: "\x00\x01\x02\xfe\xff\x00"},
		{name: "whitespace only", content: " \n\t\n"},
		{name: "over 64 KiB", content: strings.Repeat("a", 64<<10+1)},
		{name: "fifo", mode: fs.ModeNamedPipe | 0o644},
		{name: "socket", mode: fs.ModeSocket | 0o644},
		{name: "device", mode: fs.ModeDevice | fs.ModeCharDevice | 0o644},
		{name: "directory", mode: fs.ModeDir | 0o755},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			w := fake.New()
			const path = "/tmp/app.lock"
			mark := lockrec.MarkPath(path)
			var err error
			switch {
			case tc.mode.IsDir():
				err = w.Mkdir(mark, tc.mode.Perm())
			case tc.mode != 0:
				err = w.Mknod(mark, tc.mode)
			default:
				err = w.WriteFile(mark, []byte(tc.content), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			before, err := w.FS().Lstat(mark)
			if err != nil {
				t.Fatal(err)
			}
			beforeID, _ := w.FS().FileID(mark)
			w.Advance(time.Hour)
			ctx := context.Background()
			for _, opts := range []proclock.Options{{}, {RemoveOnRelease: true}} {
				l, err := proclock.Acquire(ctx, w.Spawn().Platform(), path, opts)
				if err == nil {
					l.Release()
				}
				var pe *fs.PathError
				if !errors.Is(err, proclock.ErrNotLockFile) || !errors.As(err, &pe) || pe.Path != mark {
					t.Fatalf("SQLite Acquire(%+v) beside a %s at the mark = %v; want an error matching ErrNotLockFile naming %s", opts, tc.name, err, mark)
				}
			}
			st, err := proclock.Inspect(ctx, w.Spawn().Platform(), path)
			if err != nil || st.State != proclock.StateForeign || !strings.Contains(st.Reason, "app.lock.holder") {
				t.Errorf("SQLite Inspect beside a %s at the mark = %+v, %v; want state foreign, naming the mark", tc.name, st, err)
			}
			l, err := proclock.Acquire(ctx, w.Spawn().Platform().WithoutSQLite(), path, proclock.Options{})
			if err != nil {
				t.Fatalf("file Acquire beside a %s at the mark, an hour old: %v; want the lock", tc.name, err)
			}
			l.Release()
			after, err := w.FS().Lstat(mark)
			if err != nil {
				t.Fatalf("the %s at the mark is gone: %v", tc.name, err)
			}
			afterID, _ := w.FS().FileID(mark)
			if after.Mode() != before.Mode() || afterID != beforeID || !after.ModTime().Equal(before.ModTime()) {
				t.Errorf("the %s at the mark changed: mode %v -> %v, id %v -> %v, mtime %v -> %v", tc.name, before.Mode(), after.Mode(), beforeID, afterID, before.ModTime(), after.ModTime())
			}
			if tc.mode == 0 {
				if got, err := w.ReadFile(mark); err != nil || !bytes.Equal(got, []byte(tc.content)) {
					t.Errorf("the %s at the mark now holds %.40q, %v", tc.name, got, err)
				}
			}
		})
	}
}
