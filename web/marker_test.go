package web_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/exectest"
)

// TestBrowserArtifactChanged: in a real browser against a real ferry up
// (a script agent), a download after the agent wrote its file again gives
// the agent's version and no note while snapshots are kept; with them off
// the card shows the "changed since" note once its file changed — after a
// download of it and after a reload — and a card of the current version
// does not (web/e2e/marker.mjs).
func TestBrowserArtifactChanged(t *testing.T) {
	node, chromium := browserDeps(t)
	for _, snapshots := range []bool{true, false} {
		t.Run(fmt.Sprintf("snapshots=%v", snapshots), func(t *testing.T) {
			dir := t.TempDir()
			ws := project(t, dir, nil)
			agent := filepath.Join(dir, "report.sh")
			exectest.WriteScript(t, agent, "#!/bin/sh\nread -r what\nmkdir -p out\nprintf 'report %s\\n' \"$what\" > out/report.txt\necho written\n")
			args := []string{"--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "script:" + agent}
			if !snapshots {
				args = append(args, "--snapshot-total", "0")
			}
			base, login := ferryUp(t, upEnv(dir, ""), args...)
			runScriptWithin(t, 90*time.Second, node, "marker.mjs", map[string]any{"base": base, "login": login, "chromium": chromium,
				"snapshots": snapshots, "agent": "script:report.sh", "downloads": filepath.Join(dir, "downloads")})
		})
	}
}
