package web_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBrowserTitles: in a real browser against a real ferry up, on a phone
// and a desktop, dark and light, a session is named from its first prompt,
// its row previews the last message, a search says why a session matched,
// a session opened and left empty is not kept, and opening a session
// leaves the list's order and times as they were (web/e2e/titles.mjs).
func TestBrowserTitles(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, nil)
	agent := filepath.Join(dir, "zebra.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\nread -r what\necho \"the zebra report is ready\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	base, login := ferryUp(t, upEnv(dir, ""), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "script:"+agent)
	runScript(t, node, "titles.mjs", map[string]any{"base": base, "login": login, "chromium": chromium,
		"agent": "script:zebra.sh", "screenshots": shotsDir(t, dir)})
}
