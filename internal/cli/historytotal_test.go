package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/filehistory"
)

// TestHistoryTotalFlag: --history-total on up and connect refuses what it
// cannot mean (before anything starts), and help shows it with its default.
func TestHistoryTotalFlag(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"up"}, {"connect", "--master", "http://127.0.0.1:1", "--token", "t"}} {
		for _, c := range []struct{ val, want string }{
			{"-1", "--history-total -1: must be 0 (no total bound) or a positive number of MiB"},
			{"2000000000", "--history-total 2000000000: at most 1073741824 MiB"},
			{"1G", `invalid value "1G" for flag -history-total`},
		} {
			args := append(append([]string{}, cmd...), "--history-total", c.val)
			code, _, errOut := run(args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
				t.Errorf("ferry %s: exit %d, stderr %q; want usage error with %q", strings.Join(args, " "), code, errOut, c.want)
			}
		}
		if _, _, errOut := run("help", cmd[0]); !strings.Contains(errOut, "-history-total MIB") || !strings.Contains(errOut, "(default 1024)") {
			t.Errorf("ferry help %s does not show --history-total and its default: %q", cmd[0], errOut)
		}
		// The snapshot quotas: refused before anything starts, shown in help.
		for _, c := range [][2]string{
			{"--snapshot-total", "-1"}, {"--snapshot-max-file", "0"}, {"--snapshots-per-file", "0"},
		} {
			args := append(append([]string{}, cmd...), c[0], c[1])
			if code, _, errOut := run(args...); code != cli.ExitUsage || !strings.Contains(errOut, c[0]+" "+c[1]+": must be") {
				t.Errorf("ferry %s: exit %d, stderr %q; want a usage error naming %s", strings.Join(args, " "), code, errOut, c[0])
			}
		}
		if _, _, errOut := run("help", cmd[0]); !strings.Contains(errOut, "-snapshot-total MIB") || !strings.Contains(errOut, "(default 256)") ||
			!strings.Contains(errOut, "-snapshot-max-file MIB") || !strings.Contains(errOut, "-snapshots-per-file N") {
			t.Errorf("ferry help %s does not show the snapshot flags and their defaults: %q", cmd[0], errOut)
		}
	}
}

// TestHistoryTotalReachesClient: the --history-total given to ferry up
// bounds the histories already in its state folder when it starts: with
// 1 MiB, of two ~0.8 MiB histories the less recently written is dropped
// (and logged); with the default, both stay.
func TestHistoryTotalReachesClient(t *testing.T) {
	t.Parallel()
	plant := func(state, session string, age time.Duration) string {
		dir := filepath.Join(state, "history", session)
		j, err := filehistory.OpenJournal(dir, session, "/ws", 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Record(context.Background(), "c", "Write", "/ws/f", bytes.Repeat([]byte("b"), 400_000), true, bytes.Repeat([]byte("a"), 400_000)); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(filepath.Join(dir, "journal.jsonl"), when, when); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	for _, tc := range []struct {
		args      []string
		olderGone bool
	}{
		{[]string{"--history-total", "1"}, true},
		{nil, false},
		{[]string{"--history-total", "0"}, false},
	} {
		state := t.TempDir()
		older, newer := plant(state, "older", 48*time.Hour), plant(state, "newer", time.Hour)
		u := startUp(t, nil, append([]string{"--workspace", t.TempDir(), "--agent", "echo", "--state", state}, tc.args...)...)
		if tc.olderGone {
			for deadline := time.Now().Add(10 * time.Second); exists(older) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(u.errb.String(), "file history dropped") && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if !strings.Contains(u.errb.String(), "session=older") {
				t.Errorf("ferry up %v: the log does not name the dropped history: %s", tc.args, u.errb.String())
			}
		} else {
			time.Sleep(300 * time.Millisecond) // the start-up prune had its chance
		}
		if exists(older) == tc.olderGone || !exists(newer) {
			t.Errorf("ferry up %v: older kept %v, newer kept %v; want older kept %v", tc.args, exists(older), exists(newer), !tc.olderGone)
		}
	}
}
