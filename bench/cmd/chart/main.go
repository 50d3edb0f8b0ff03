// Command chart reads the output of the bench module's benchmarks
// (go test -bench) and draws the handoff latencies as an SVG chart: for
// each arrival case, one row per lock, a dot at the median and a whisker
// to the 99th percentile, on a logarithmic time axis, with the targets of
// docs/performance.md marked. Where a case ran more than once (-count),
// it draws the median of the runs' medians and of their p99s.
//
//	go test -run '^$' -bench Handoff -count 3 | tee handoff.txt
//	go run ./cmd/chart -o ../docs/performance-handoff.svg handoff.txt
//
// It uses the standard library only.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("o", "", "write the SVG to this file (default: standard output)")
	title := flag.String("title", "Handoff latency: median (dot) and p99 (whisker)", "the chart's title")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: chart [-o file.svg] [-title text] [bench-output ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	var results []result
	if flag.NArg() == 0 {
		results = parse(os.Stdin)
	}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fail(err)
		}
		results = append(results, parse(f)...)
		f.Close()
	}
	cases := summarize(results)
	if len(cases) == 0 {
		fail(fmt.Errorf("no BenchmarkHandoff results with µs-median and µs-p99 in the input"))
	}
	w := io.Writer(os.Stdout)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		w = f
	}
	if err := draw(w, *title, cases); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chart:", err)
	os.Exit(1)
}

// result is one BenchmarkHandoff line: a lock, an arrival case, and its
// median and p99 in µs.
type result struct {
	lock, arrival string
	median, p99   float64
}

// parse reads go test -bench output and returns its handoff results,
// skipping every other line.
func parse(r io.Reader) []result {
	var results []result
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkHandoff/") {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(fields[0], "BenchmarkHandoff/"), "/")
		if len(parts) != 2 {
			continue
		}
		res := result{lock: parts[0], arrival: trimProcs(parts[1]), median: math.NaN(), p99: math.NaN()}
		// Past the name and the iteration count come value-unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			switch fields[i+1] {
			case "µs-median":
				res.median = v
			case "µs-p99":
				res.p99 = v
			}
		}
		if !math.IsNaN(res.median) && !math.IsNaN(res.p99) {
			results = append(results, res)
		}
	}
	return results
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// group is one arrival case with its rows, in the order first seen.
type group struct {
	arrival string
	rows    []result
}

// summarize merges the runs of each lock and case (the median of each
// figure) and groups the rows by arrival case.
func summarize(results []result) []group {
	type key struct{ lock, arrival string }
	var order []key
	runs := map[key][]result{}
	for _, r := range results {
		k := key{r.lock, r.arrival}
		if _, seen := runs[k]; !seen {
			order = append(order, k)
		}
		runs[k] = append(runs[k], r)
	}
	var groups []group
	for _, k := range order {
		var medians, p99s []float64
		for _, r := range runs[k] {
			medians = append(medians, r.median)
			p99s = append(p99s, r.p99)
		}
		row := result{lock: k.lock, arrival: k.arrival, median: median(medians), p99: median(p99s)}
		i := slices.IndexFunc(groups, func(g group) bool { return g.arrival == k.arrival })
		if i < 0 {
			groups = append(groups, group{arrival: k.arrival})
			i = len(groups) - 1
		}
		groups[i].rows = append(groups[i].rows, row)
	}
	return groups
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Targets of docs/performance.md, in µs: a handoff's median and p99.
const (
	targetMedian = 300
	targetP99    = 2000
)

// Layout, in SVG user units.
const (
	width     = 860
	labelW    = 150 // the lock names, left of the plot
	valueW    = 170 // the figures, right of the plot
	rowH      = 22
	groupGap  = 26
	top       = 56
	axisSpace = 44
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// draw writes the chart.
func draw(w io.Writer, title string, groups []group) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	var locks []string
	rows := 0
	for _, g := range groups {
		for _, r := range g.rows {
			lo, hi = min(lo, r.median, targetMedian), max(hi, r.p99, targetP99)
			if !slices.Contains(locks, r.lock) {
				locks = append(locks, r.lock)
			}
			rows++
		}
	}
	lo = math.Pow(10, math.Floor(math.Log10(max(lo, 1e-3))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	plotL, plotR := float64(labelW), float64(width-valueW)
	x := func(us float64) float64 {
		return plotL + (math.Log10(us)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(plotR-plotL)
	}
	plotB := top + rows*rowH + len(groups)*groupGap
	height := plotB + axisSpace + 10
	color := func(lock string) string { return palette[slices.Index(locks, lock)%len(palette)] }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", 10, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#555">holder and waiter in two processes; dashed: the targets, median under %d µs, p99 under %d ms; log scale</text>`+"\n", 10, targetMedian, targetP99/1000)
	// Decades and the targets.
	for d := lo; d <= hi*1.0001; d *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(d), top-6, x(d), plotB)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(d), plotB+16, esc(duration(d)))
	}
	for _, t := range []float64{targetMedian, targetP99} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4 3"/>`+"\n", x(t), top-6, x(t), plotB)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">time from the holder letting go to the waiter holding the lock</text>`+"\n", (plotL+plotR)/2, plotB+34)
	y := top
	for _, g := range groups {
		y += groupGap
		fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y-8, esc(arrivalTitle(g.arrival)))
		for _, r := range g.rows {
			cy := float64(y) + rowH/2
			c := color(r.lock)
			fmt.Fprintf(&b, `<text x="20" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", cy, esc(r.lock))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x(r.median), cy, x(r.p99), cy, c)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x(r.p99), cy-5, x(r.p99), cy+5, c)
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", x(r.median), cy, c)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">%s, p99 %s</text>`+"\n", plotR+12, cy, esc(duration(r.median)), esc(duration(r.p99)))
			y += rowH
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// arrivalTitle says what an arrival case of BenchmarkHandoff is.
func arrivalTitle(arrival string) string {
	switch {
	case arrival == "settled":
		return "waiter settled in its wait (released 100–200 ms after it came)"
	case arrival == "kill":
		return "holder SIGKILLed (waiter settled)"
	case strings.HasPrefix(arrival, "arrive-"):
		before := strings.TrimPrefix(arrival, "arrive-")
		if n := strings.TrimSuffix(before, "ms"); n != before {
			before = n + " ms"
		}
		return "waiter came " + before + " before the release"
	}
	return arrival
}

// duration writes µs as µs, ms or s, with three significant digits at most.
func duration(us float64) string {
	if us >= 1e6 {
		return strconv.FormatFloat(us/1e6, 'g', 3, 64) + " s"
	}
	if us >= 1000 {
		return strconv.FormatFloat(us/1000, 'g', 3, 64) + " ms"
	}
	return strconv.FormatFloat(us, 'g', 3, 64) + " µs"
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func esc(s string) string { return escaper.Replace(s) }
