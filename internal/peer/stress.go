package peer

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// StressPlan is a run of acquisitions checked two ways: an occupancy
// marker that two holders at once would trip over (created with O_EXCL on
// entry, removed on exit), and a counter that lost updates would leave
// short.
type StressPlan struct {
	Lock    string           `json:"lock"`
	Marker  string           `json:"marker"`
	Counter string           `json:"counter"`
	N       int              `json:"n"`
	Opts    proclock.Options `json:"opts"`
}

// StressResult is what a stress run saw.
type StressResult struct {
	// Done is the critical sections completed.
	Done int `json:"done"`
	// Overlaps counts entries that found the marker already there.
	Overlaps int `json:"overlaps"`
}

// stress runs plan on p: N times, acquire (waiting), mark, count, unmark,
// release.
// With t, every step is recorded, and written out to TraceEnv's directory
// at the end.
func stress(ctx context.Context, p *platform.Platform, plan StressPlan, t *tracer) (res StressResult, err error) {
	if t != nil {
		defer func() {
			t.event("end", plan.Lock, "done=%d overlaps=%d %v", res.Done, res.Overlaps, errText(err))
			if ferr := t.flush(os.Getenv(TraceEnv)); err == nil {
				err = ferr
			}
		}()
	}
	plan.Opts.Wait = true
	for range plan.N {
		t.event("acquire", plan.Lock, "")
		l, err := proclock.Acquire(ctx, p, plan.Lock, plan.Opts)
		if err != nil {
			return res, err
		}
		t.event("acquired", plan.Lock, "%s", l.Mechanism())
		overlap, err := criticalSection(p.FS, plan)
		if overlap {
			t.event("OVERLAP", plan.Marker, "")
			res.Overlaps++
		}
		t.event("release", plan.Lock, "")
		if rerr := l.Release(); err == nil {
			err = rerr
		}
		t.event("released", plan.Lock, "%v", errText(err))
		if err != nil {
			return res, err
		}
		res.Done++
	}
	return res, nil
}

// criticalSection marks entry, adds one to the counter file, and unmarks.
// It reports whether another holder's marker was there.
func criticalSection(fsys lockfs.FS, plan StressPlan) (overlap bool, err error) {
	m, err := fsys.OpenFile(plan.Marker, fsx.CreateExcl, 0o644)
	if errors.Is(err, fs.ErrExist) {
		overlap = true
	} else if err != nil {
		return false, err
	} else {
		m.Close()
		defer fsys.Remove(plan.Marker)
	}
	n := 0
	if data, err := readFile(fsys, plan.Counter); err == nil {
		n, _ = strconv.Atoi(string(data))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return overlap, err
	}
	f, err := fsys.OpenFile(plan.Counter, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return overlap, err
	}
	_, err = f.Write([]byte(strconv.Itoa(n + 1)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return overlap, err
}

func readFile(fsys lockfs.FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Stress runs plan in the peer (see StressPlan).
func (p *Native) Stress(ctx context.Context, plan StressPlan) (StressResult, error) {
	r := p.call(ctx, request{Op: "stress", Stress: &plan})
	if r.Stress == nil {
		return StressResult{}, r.Err.toError()
	}
	return *r.Stress, r.Err.toError()
}
