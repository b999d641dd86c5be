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

// TestBrowserSessions: in a real browser against a real ferry up (a script
// agent whose every answer says "zebra"), a person renames a session
// inline, finds sessions by title, prompt and answer, archives and
// unarchives one, and deletes one after confirming, while a second UI
// follows; the controls are touch-sized on a phone, and every screenshot
// passes axe-core's WCAG 2.1 AA rules (web/e2e/sessions.mjs).
func TestBrowserSessions(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "zebra.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\nread -r what\necho \"the zebra report is ready\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"XDG_DATA_HOME": filepath.Join(dir, "data"), "XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir,
		"PATH": os.Getenv("PATH"),
	}
	base, login := ferryUp(t, env, "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "script:"+agent)
	shots := *screenshots
	if shots == "" {
		shots = filepath.Join(dir, "screenshots")
	} else if abs, err := filepath.Abs(shots); err != nil {
		t.Fatal(err)
	} else {
		shots = abs
	}
	cfg, err := json.Marshal(map[string]any{"base": base, "login": login, "chromium": chromium,
		"agent": "script:zebra.sh", "answerWord": "ZEBRA", "screenshots": shots})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", "sessions.mjs"), cfgPath)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	t.Logf("browser run:\n%s", out.String())
	if runErr != nil {
		t.Fatalf("the browser run failed: %v", runErr)
	}
}
