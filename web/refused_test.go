package web_test

import (
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/exectest"
)

// TestBrowserPromptNotRun: in a real browser against a real `ferry up`,
// a prompt the session's client refuses is shown as not run on the page
// that watches the session, although another UI sent it and is gone
// (web/e2e/refused.mjs): a second UI connection sends a prompt while the
// page's turn runs, the client refuses it as busy, and the page marks that
// prompt "Not run: … Send it again." live and after a reload; "Edit
// again" puts its text back in the prompt box.
func TestBrowserPromptNotRun(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# refused\n"})
	script := filepath.Join(dir, "slow.sh")
	exectest.WriteScript(t, script, "#!/bin/sh\ncat >/dev/null\nsleep 4\necho 'slow answer'\n")
	base, login := ferryUp(t, upEnv(dir, ""), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "script:"+script)
	runScript(t, node, "refused.mjs", map[string]any{"base": base, "login": login, "chromium": chromium,
		"script": "script:slow.sh", "screenshots": shotsDir(t, dir)})
}
