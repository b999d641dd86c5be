package cli

import (
	"flag"
	"io"
	"testing"
)

// TestSnapshotFlags: the snapshot flags of ferry connect and ferry up
// become the client's quotas in bytes (defaults included), --snapshot-total
// 0 turns snapshots off (the client's < 0), and what they cannot mean is
// refused.
func TestSnapshotFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args           []string
		maxFile, total int64
		perPath        int
		ok             bool
	}{
		{nil, 32 << 20, 256 << 20, 5, true},
		{[]string{"--snapshot-total", "10", "--snapshot-max-file", "2", "--snapshots-per-file", "3"}, 2 << 20, 10 << 20, 3, true},
		{[]string{"--snapshot-total", "0"}, -1, -1, -1, true},
		{[]string{"--snapshot-total", "-1"}, 0, 0, 0, false},
		{[]string{"--snapshot-max-file", "0"}, 0, 0, 0, false},
		{[]string{"--snapshots-per-file", "0"}, 0, 0, 0, false},
		{[]string{"--snapshots-per-file", "1001"}, 0, 0, 0, false},
		{[]string{"--snapshot-total", "2000000000"}, 0, 0, 0, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f clientFlags
		f.register(fs, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.check()
		if (err == nil) != c.ok {
			t.Errorf("%v: %v, want ok %v", c.args, err, c.ok)
			continue
		}
		if c.ok && (f.snapMaxFile != c.maxFile || f.snapTotal != c.total || f.snapPerPath != c.perPath) {
			t.Errorf("%v: max file %d, total %d, per path %d; want %d, %d, %d", c.args, f.snapMaxFile, f.snapTotal, f.snapPerPath, c.maxFile, c.total, c.perPath)
		}
	}
}
