package web_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserFirstHour drives the frictions of a new user's first hour
// (issue 32, item 6; web/e2e/firsthour.mjs) in headless Chromium against
// a real `ferry up`, on 390×844 and 1280×800, dark and light: a login
// link that does not work answers a page styled like the app (its header
// and logo, dark or light, a stylesheet the policy allows); a bad token
// pasted into the sign-in form is refused in place; the header's logo is
// the app's icon; a script agent's output keeps its lines; a turn that
// changed no file offers no "Rewind files"; error chips show what a code
// means, not the code; a pasted image shows its thumbnail; after Undo, a
// file card says the workspace's file differs from the version it
// downloads; and while ferry is down the banner says what survives, and
// a turn ferry's restart cut names what restarted.
func TestBrowserFirstHour(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# first hour\n"})
	script := filepath.Join(dir, "plain.sh")
	body := "#!/bin/sh\nin=$(cat)\ncase \"$in\" in\n" +
		"*fail*) echo 'partial output'; echo 'boom' >&2; exit 3;;\n" +
		"*slow*) echo 'started'; sleep 60;;\n" +
		"*) printf 'line one\\nline two\\n  indented *not emphasis*\\n';;\nesac\n"
	exectest.WriteScript(t, script, body)
	srv := fake.New(t)
	srv.Script(
		// The Write asks (default mode), is allowed and hands the file over.
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "notes/agent.txt", "content": "the agent's version\n"}}}},
		fake.Reply{Text: []string{"Wrote notes/agent.txt."}},
	)
	env := upEnv(dir, srv.URL())
	db := filepath.Join(dir, "ferry.db")
	args := []string{"--db", db, "--workspace", ws, "--agent", "builtin", "--agent", "script:" + script}
	base, login, stop, err := startUp(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	stops := []func() error{stop}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, stop := range stops {
			if err := stop(); err != nil {
				t.Error(err)
			}
		}
	})
	ctl := http.NewServeMux()
	ctl.HandleFunc("POST /login", func(w http.ResponseWriter, _ *http.Request) {
		secret, err := newLogin(env, db)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s/login?token=%s", base, secret)
	})
	ctl.HandleFunc("POST /stop", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		stop := stops[len(stops)-1]
		mu.Unlock()
		if err := stop(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ctl.HandleFunc("POST /start", func(w http.ResponseWriter, _ *http.Request) {
		again, _, stop, err := startUp(env, append(slices.Clone(args), "--addr", strings.TrimPrefix(base, "http://"))...)
		if err == nil && again != base {
			err = fmt.Errorf("ferry up started again on %s, not %s", again, base)
		}
		if stop != nil {
			mu.Lock()
			stops = append(stops, stop)
			mu.Unlock()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	control := serveControl(t, ctl)
	runScriptWithin(t, 7*time.Minute, node, "firsthour.mjs", map[string]any{
		"base": base, "login": login, "control": control, "chromium": chromium,
		"script": "script:plain.sh", "screenshots": shotsDir(t, dir),
	})
	// The Undo clicked in the browser removed the file the agent made.
	if _, err := os.Stat(filepath.Join(ws, "notes", "agent.txt")); !os.IsNotExist(err) {
		t.Errorf("notes/agent.txt after its Write was undone: %v", err)
	}
}
