package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
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
		dir := t.TempDir()
		ws := filepath.Join(dir, "project")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		agent := filepath.Join(dir, "report.sh")
		if err := os.WriteFile(agent, []byte("#!/bin/sh\nread -r what\nmkdir -p out\nprintf 'report %s\\n' \"$what\" > out/report.txt\necho written\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{
			"XDG_DATA_HOME": filepath.Join(dir, "data"), "XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir,
			"PATH": os.Getenv("PATH"),
		}
		args := []string{"--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "script:" + agent}
		if !snapshots {
			args = append(args, "--snapshot-total", "0")
		}
		base, login := ferryUp(t, env, args...)
		cfg, err := json.Marshal(map[string]any{"base": base, "login": login, "chromium": chromium, "snapshots": snapshots,
			"agent": "script:report.sh", "downloads": filepath.Join(dir, "downloads")})
		if err != nil {
			t.Fatal(err)
		}
		cfgPath := filepath.Join(dir, "config.json")
		if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", "marker.mjs"), cfgPath)
		cmd.WaitDelay = 5 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		runErr := cmd.Run()
		cancel()
		t.Logf("browser run (snapshots %v):\n%s", snapshots, out.String())
		if runErr != nil {
			t.Fatalf("the browser run (snapshots %v) failed: %v", snapshots, runErr)
		}
	}
}
