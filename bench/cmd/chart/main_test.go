package main

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

const benchOutput = `goos: linux
BenchmarkHandoff/proclock-sqlite/settled-2    	      10	        10.00 samples	       522.6 µs-median	       688.8 µs-p99
BenchmarkHandoff/proclock-sqlite/settled-2    	      10	        10.00 samples	       500.0 µs-median	       900.0 µs-p99
BenchmarkHandoff/proclock-sqlite/settled-2    	      10	        10.00 samples	       600.0 µs-median	       700.0 µs-p99
BenchmarkHandoff/flock/settled-2              	      10	        10.00 samples	        31.39 µs-median	        77.00 µs-p99
BenchmarkHandoff/flock/kill-2                 	      10	        10.00 samples	       507.9 µs-median	      7006 µs-p99
BenchmarkAcquireRelease/flock-2               	      10	     10877 ns/op	     184 B/op	       4 allocs/op
BenchmarkHandoff/flock/arrive-2ms             	      10	        10.00 samples
PASS
`

func TestSummarizeMergesRunsByMedian(t *testing.T) {
	groups := summarize(parse(strings.NewReader(benchOutput)))
	if len(groups) != 2 || groups[0].arrival != "settled" || groups[1].arrival != "kill" {
		t.Fatalf("groups = %+v, want settled then kill (the line without figures skipped)", groups)
	}
	rows := groups[0].rows
	if len(rows) != 2 || rows[0].lock != "proclock-sqlite" || rows[1].lock != "flock" {
		t.Fatalf("settled rows = %+v", rows)
	}
	if rows[0].median != 522.6 || rows[0].p99 != 700 {
		t.Errorf("proclock-sqlite settled = %v, %v; want the medians of three runs, 522.6 and 700", rows[0].median, rows[0].p99)
	}
}

func TestDrawIsWellFormedSVG(t *testing.T) {
	var b strings.Builder
	if err := draw(&b, "a <title> & more", summarize(parse(strings.NewReader(benchOutput)))); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	circles := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b.String())
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "circle" {
			circles++
		}
	}
	if circles != 3 {
		t.Errorf("%d dots, want one per row (3)", circles)
	}
	if !strings.Contains(b.String(), "7.01 ms") {
		t.Errorf("the kill row's p99 (7006 µs) is not written as 7.01 ms:\n%s", b.String())
	}
}

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		us   float64
		want string
	}{{31.39, "31.4 µs"}, {1000, "1 ms"}, {7006, "7.01 ms"}, {1e5, "100 ms"}, {1e6, "1 s"}} {
		if got := duration(c.us); got != c.want {
			t.Errorf("duration(%v) = %q, want %q", c.us, got, c.want)
		}
	}
}
