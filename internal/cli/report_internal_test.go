package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestReport: the one place a command's failure reaches the user prints
// the error's text once, as one line (or the lines it holds), and picks
// the exit code: 0 without an error, 1 for a plain one, a CodeError's
// own code, and nothing printed for a CodeError without an Err.
func TestReport(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, ExitOK, ""},
		{errors.New("ferry x: broken"), ExitError, "ferry x: broken\n"},
		{usageErrorf("ferry x: --n %d: too big", 3), ExitUsage, "ferry x: --n 3: too big\n"},
		{fmt.Errorf("ferry x: %w", usageErrorf("bad flag")), ExitUsage, "ferry x: bad flag\n"},
		{exitWith(ExitUsage), ExitUsage, ""},
		{fmt.Errorf("wrapped: %w", exitWith(ExitError)), ExitError, ""},
		{machineTakenError{errors.New("taken")}, ExitError, machineTakenError{errors.New("taken")}.Error()},
	} {
		var b bytes.Buffer
		if code := report(&b, c.err); code != c.code || b.String() != c.out {
			t.Errorf("report(%v) = %d, %q; want %d, %q", c.err, code, b.String(), c.code, c.out)
		}
	}
}
