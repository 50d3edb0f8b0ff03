package platform_test

import (
	"testing"

	"github.com/proclock/proclock/platform"
)

// WithoutSQLite is a copy without SQLite, everything else shared; the
// platform it was made from keeps its SQLite.
func TestWithoutSQLite(t *testing.T) {
	p := platform.Native()
	q := p.WithoutSQLite()
	if q == p {
		t.Fatal("WithoutSQLite returned p itself; want a copy")
	}
	if q.SQLite != nil {
		t.Fatalf("copy's SQLite = %v; want nil (the file mechanism)", q.SQLite)
	}
	// (A Waker need not be comparable: only whether there is one.)
	if q.FS != p.FS || q.Process != p.Process || q.Clock != p.Clock || (q.Wake == nil) != (p.Wake == nil) {
		t.Fatalf("copy = %+v; want p's FS, Process, Clock and Wake (%+v)", *q, *p)
	}
	if want := platform.Native().SQLite; p.SQLite != want {
		t.Fatalf("p's SQLite = %v after WithoutSQLite; want it unchanged (%v)", p.SQLite, want)
	}
}
