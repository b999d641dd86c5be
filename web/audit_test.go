package web_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// The audits of the web UI by the tools the web uses (docs/ui.md, "Audits"):
// Lighthouse's accessibility and best-practices scores, and axe-core's WCAG
// 2.1 A/AA rules on every screen in both colour schemes.

// auditMin is the lowest Lighthouse score (0–100) a category may have.
const auditMin = 95

const lighthouseHelp = "Lighthouse is missing: npm ci --prefix web installs the pinned lighthouse; " +
	"set FERRY_REQUIRE_BROWSER=1 to fail instead of skipping"

// TestLighthouse runs Lighthouse (pinned in web/package.json) in the real
// Chromium against a real `ferry up`: the sessions list and a session view
// with a pending permission, as a phone (390×844, mobile) and a desktop
// (1280×800). Accessibility and best practices must each score at least
// auditMin; Chromium resolves no host but loopback. The scores are logged
// as "lighthouse: <page> <form factor> accessibility=N best-practices=N".
func TestLighthouse(t *testing.T) {
	node, chromium := browserDeps(t)
	if _, err := os.Stat(filepath.Join("node_modules", "lighthouse", "package.json")); err != nil {
		if os.Getenv("FERRY_REQUIRE_BROWSER") != "" {
			t.Fatal(lighthouseHelp)
		}
		t.Skip(lighthouseHelp)
	}
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# project\n"})
	env := upEnv(dir, "")
	base, login := ferryUp(t, env, "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "echo")
	runScriptWithin(t, 8*time.Minute, node, "lighthouse.mjs", map[string]any{
		"base": base, "login": login, "chromium": chromium, "min": auditMin,
	})
}

// TestAxeEveryScreen runs axe-core's WCAG 2.1 A and AA rules on every
// screen, dialog and sheet of the UI (e2e/audit.mjs lists them; so does
// docs/ui.md), in the light and the dark colour scheme, as a phone
// (390×844) and as a desktop (1280×800), against a real `ferry up` with the
// echo agent and ferry's own on the fake Anthropic server. Any violation
// fails it; the log has one "axe: <form> <scheme> <screen>: N violations"
// line per audit.
func TestAxeEveryScreen(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{
		"README.md":   "# project\n",
		"src/auth.ts": "export function check(t: string) {\n  return t == expected\n}\n",
	})
	srv := fake.New(t)
	forms := []string{"phone", "desktop"}
	for i := range forms {
		// Each pass: a Read, an Edit and a Write (both asked), then an answer.
		file := fmt.Sprintf("out/report-%d.csv", i)
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "src/auth.ts"}}}},
			fake.Reply{Text: []string{"Fixing ", "the comparison."},
				ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "src/auth.ts",
					"old_string": []string{"t == expected", "t === expected"}[i], "new_string": []string{"t === expected", "t == expected"}[i], "artifact": false}}}},
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": "region,sales\nnorth,10\n"}}}},
			fake.Reply{Text: []string{"Done: the check now uses `===`.\n\n```ts\nreturn t === expected\n```\n\n", "- a list item\n- the report is **" + file + "**\n"}},
		)
	}
	env := upEnv(dir, srv.URL())
	db := filepath.Join(dir, "ferry.db")
	base, login := ferryUp(t, env, "--db", db, "--workspace", ws, "--agent", "builtin", "--agent", "echo")
	ctl := http.NewServeMux()
	ctl.HandleFunc("POST /login", func(w http.ResponseWriter, _ *http.Request) {
		secret, err := newLogin(env, db)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(base + "/login?token=" + strings.TrimSpace(secret)))
	})
	// Another site (the control server's port) with a login link on it:
	// following it, the master asks before it signs in.
	ctl.HandleFunc("GET /link", func(w http.ResponseWriter, _ *http.Request) {
		secret, err := newLogin(env, db)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, `<!doctype html><html lang="en"><title>another site</title><p><a id="go" href="%s/login?token=%s">open ferry</a></p></html>`, base, strings.TrimSpace(secret))
	})
	runScriptWithin(t, 8*time.Minute, node, "audit.mjs", map[string]any{
		"base": base, "login": login, "control": serveControl(t, ctl), "chromium": chromium, "forms": forms,
	})
}
