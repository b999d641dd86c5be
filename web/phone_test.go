package web_test

import (
	"path/filepath"
	"testing"
	"time"
)

// TestBrowserOpenOnPhone: issue 33 item 4. "Open on your phone" in the
// real UI of a real `ferry up`, on 1280×800 and 390×844: the dialog's QR
// code decodes (jsQR) to the link it shows, which signs a second browser
// context in once (web/e2e/phone.mjs).
func TestBrowserOpenOnPhone(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# phone\n"})
	env := upEnv(dir, "")
	db := filepath.Join(dir, "ferry.db")
	base, _ := ferryUp(t, env, "--db", db, "--workspace", ws, "--agent", "echo")
	looks := []string{"desktop", "phone"}
	logins := map[string]string{}
	for _, look := range looks {
		tok, err := newLogin(env, db)
		if err != nil {
			t.Fatal(err)
		}
		logins[look] = base + "/login?token=" + tok
	}
	runScriptWithin(t, 180*time.Second, node, "phone.mjs", map[string]any{"base": base, "looks": looks, "logins": logins,
		"chromium": chromium, "screenshots": shotsDir(t, t.TempDir())})
}
