package web_test

import (
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
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
	ws := project(t, dir, nil)
	agent := filepath.Join(dir, "zebra.sh")
	exectest.WriteScript(t, agent, "#!/bin/sh\nread -r what\necho \"the zebra report is ready\"\n")
	base, login := ferryUp(t, upEnv(dir, ""), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "script:"+agent)
	runScript(t, node, "sessions.mjs", map[string]any{"base": base, "login": login, "chromium": chromium,
		"agent": "script:zebra.sh", "answerWord": "ZEBRA", "screenshots": shotsDir(t, dir)})
}
