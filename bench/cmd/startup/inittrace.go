package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// initEntry is one package's line of GODEBUG=inittrace=1:
//
//	init github.com/x/y @3.3 ms, 0.030 ms clock, 1152 bytes, 5 allocs
type initEntry struct {
	pkg           string
	at, clock     float64 // ms since start, ms spent in the package's init
	bytes, allocs int64
}

// initTrace is a whole run's trace.
type initTrace struct {
	entries []initEntry
	clock   float64 // sum of the packages' init clocks, ms
	bytes   int64
	allocs  int64
}

// parseInitTrace reads the init lines of a GODEBUG=inittrace=1 run's
// standard error; other lines (the program's own output) are skipped, a
// malformed init line is an error.
func parseInitTrace(r io.Reader) (*initTrace, error) {
	t := &initTrace{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		e, err := parseInitLine(line)
		if err != nil {
			return nil, fmt.Errorf("inittrace line %d: %w", n, err)
		}
		t.entries = append(t.entries, e)
		t.clock += e.clock
		t.bytes += e.bytes
		t.allocs += e.allocs
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read inittrace: %w", err)
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("no init lines in the trace (is GODEBUG=inittrace=1 set?)")
	}
	return t, nil
}

func parseInitLine(line string) (initEntry, error) {
	var e initEntry
	// "init PKG @A ms, B ms clock, C bytes, D allocs"
	rest := strings.TrimPrefix(line, "init ")
	pkg, rest, ok := strings.Cut(rest, " @")
	if !ok || pkg == "" {
		return e, fmt.Errorf("%q: no package and @time", line)
	}
	e.pkg = pkg
	fields := strings.Split(rest, ", ")
	if len(fields) != 4 {
		return e, fmt.Errorf("%q: want 4 comma-separated figures, have %d", line, len(fields))
	}
	var err error
	num := func(f, unit string) string {
		v, ok := strings.CutSuffix(f, " "+unit)
		if !ok && err == nil {
			err = fmt.Errorf("%q: %q does not end in %q", line, f, unit)
		}
		return v
	}
	at, clock, bytes, allocs := num(fields[0], "ms"), num(fields[1], "ms clock"), num(fields[2], "bytes"), num(fields[3], "allocs")
	if err != nil {
		return e, err
	}
	var errs [4]error
	e.at, errs[0] = strconv.ParseFloat(at, 64)
	e.clock, errs[1] = strconv.ParseFloat(clock, 64)
	e.bytes, errs[2] = strconv.ParseInt(bytes, 10, 64)
	e.allocs, errs[3] = strconv.ParseInt(allocs, 10, 64)
	for _, err := range errs {
		if err != nil {
			return e, fmt.Errorf("%q: %w", line, err)
		}
	}
	return e, nil
}

// top returns the n packages with the largest init clock, largest first.
func (t *initTrace) top(n int) []initEntry {
	es := slices.Clone(t.entries)
	slices.SortStableFunc(es, func(a, b initEntry) int { return cmp.Compare(b.clock, a.clock) })
	return es[:min(n, len(es))]
}
