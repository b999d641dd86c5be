package web_test

import (
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
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
	exectest.WriteScript(t, agent, "#!/bin/sh\nread -r what\necho \"the zebra report is ready\"\n")
	base, login := ferryUp(t, upEnv(dir, ""), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "script:"+agent)
	runScript(t, node, "titles.mjs", map[string]any{"base": base, "login": login, "chromium": chromium,
		"agent": "script:zebra.sh", "screenshots": shotsDir(t, dir)})
}
