package web_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserLayout measures the session view with a pending Edit
// permission (ferry's agent on the fake Anthropic server, as TestBrowser)
// on a phone (390×844) and a desktop (1280×800), dark and light
// (web/e2e/layout.mjs): as the app scrolls the permission into view, its
// title, its first changed diff line, Allow and Deny are all inside the
// viewport and the conversation; the conversation takes at least 60 % of
// the height, the prompt box at least 55 % of a phone's width; the header
// is one row. It also checks the session menu (Delete says why it is off
// during a turn) and the settings sheet (the default model listed once).
// See docs/ui.md.
func TestBrowserLayout(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	// A file long enough that the Edit's diff has context around it.
	var src strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&src, "export const route%02d = '/r%02d'\n", i, i)
	}
	ws := project(t, dir, map[string]string{"src/routes.ts": src.String()})
	const (
		def   = "claude-3-5-haiku-20241022"
		other = "claude-sonnet-4-5"
	)
	srv := fake.New(t)
	srv.SetModels(fake.Model{ID: other, Name: "Claude Sonnet 4.5", Thinking: true}, fake.Model{ID: def, Name: "Claude Haiku 3.5"})
	usage := llm.Usage{InputTokens: 2400, OutputTokens: 180}
	srv.Script(
		fake.Reply{Text: []string{"I'll read the routes first."}, Usage: usage,
			ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "src/routes.ts"}}}},
		fake.Reply{Text: []string{"Now moving the home route and the two after it."}, Usage: usage,
			ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "src/routes.ts",
				"old_string": "export const route12 = '/r12'\nexport const route13 = '/r13'\nexport const route14 = '/r14'",
				"new_string": "export const route12 = '/home'\nexport const route13 = '/home/r13'\nexport const route14 = '/home/r14'", "artifact": false}}}},
	)
	env := upEnv(dir, srv.URL())
	env["FERRY_MODEL"] = def
	base, login := ferryUp(t, env, "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin")
	runScript(t, node, "layout.mjs", map[string]any{
		"base": base, "login": login, "chromium": chromium, "screenshots": shotsDir(t, dir), "default_model": def, "other_model": other,
	})
}
