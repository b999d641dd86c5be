package web_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserDrafts: issue 32 item 3. In headless Chromium against a real
// `ferry up` (ferry's agent on a fake model), on 390×844 and 1280×800,
// dark and light: the prompt box's text and uploaded file survive a
// reload, a closed tab and (once) a restart of ferry on its port; a prompt the master refuses stays the draft,
// one it accepts does not (web/e2e/drafts.mjs).
func TestBrowserDrafts(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# drafts\n"})
	model := fake.New(t)
	for range signinLooks {
		model.Script(fake.Reply{Text: []string{"Noted."}})
	}
	env := upEnv(dir, model.URL())
	db := filepath.Join(dir, "ferry.db")
	args := []string{"--db", db, "--workspace", ws, "--agent", "builtin"}
	base, login, stop := ferryUpStoppable(t, env, args...)
	logins := map[string]string{signinLooks[0]: login}
	for _, look := range signinLooks[1:] {
		tok, err := newLogin(env, db)
		if err != nil {
			t.Fatal(err)
		}
		logins[look] = base + "/login?token=" + strings.TrimSpace(tok)
	}
	// /restart stops ferry and starts it again on its port and database,
	// as a restart of `ferry up` would.
	ctl := http.NewServeMux()
	ctl.HandleFunc("POST /restart", func(w http.ResponseWriter, _ *http.Request) {
		stop()
		again, _, stopAgain, err := startUp(env, append(args, "--addr", strings.TrimPrefix(base, "http://"))...)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		t.Cleanup(func() {
			if err := stopAgain(); err != nil {
				t.Error(err)
			}
		})
		_, _ = w.Write([]byte(again))
	})
	runScriptWithin(t, 240*time.Second, node, "drafts.mjs", map[string]any{"base": base, "logins": logins, "looks": signinLooks,
		"control": serveControl(t, ctl), "chromium": chromium, "screenshots": shotsDir(t, dir)})
}

// TestJSDraftUnits checks draft.js under Node: a draft's bounds, pruning
// by count and age, and a full storage (web/e2e/draftunits.mjs).
func TestJSDraftUnits(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("FERRY_REQUIRE_BROWSER") != "" {
			t.Fatal("node is missing: apt-get install -y nodejs")
		}
		t.Skip("node is missing: apt-get install -y nodejs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join("e2e", "draftunits.mjs")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Log(string(out))
}
