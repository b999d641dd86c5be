package cli

import "testing"

// TestCheckHistoryTotal: the MiB of --history-total become the client's
// bytes, 0 meaning no bound (the client's < 0).
func TestCheckHistoryTotal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mib, want int64
		ok        bool
	}{
		{1024, 1 << 30, true},
		{1, 1 << 20, true},
		{0, -1, true},
		{-5, 0, false},
		{maxHistoryTotalMiB + 1, 0, false},
	} {
		got, err := checkHistoryTotal(c.mib)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("checkHistoryTotal(%d) = %d, %v; want %d, ok %v", c.mib, got, err, c.want, c.ok)
		}
	}
}
