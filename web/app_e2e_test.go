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

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestBrowserApp drives the installable app in headless Chromium against
// a real `ferry up` (docs/ui.md, "Install the app" and "Waiting for
// you"): the service worker installs and keeps the shell; a permission
// the agent asks shows as "waiting for you" in another page's session
// list within seconds (a master.session.changed "status", not the 25 s list
// refresh), with the title "(1) ferry" and the app badge set to 1, and
// goes when it is answered; with the master stopped, the new-session menu
// offers no machine, the app opens from the cache saying it reconnects,
// and a page the cache does not hold is the offline page; started again,
// the offline page loads by itself and the app reconnects.
func TestBrowserApp(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# app\n"})
	srv := fake.New(t)
	srv.Script(
		// The Write asks for permission (default mode): the session waits.
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "allowed\n"}}}},
		// Allowed: the turn goes on running until cancelled.
		fake.Reply{Text: []string{"Wrote notes.txt; now thinking ", "at length…"}, Hold: true},
	)
	env := upEnv(dir, srv.URL())
	args := []string{"--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin"}
	base, login, stop, err := startUp(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	// The script stops the master when it wants it down, and starts it
	// again on the same address, with the same store (the sign-in holds).
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

	runScript(t, node, "app.mjs", map[string]any{
		"base": base, "login": login, "control": control, "chromium": chromium,
		"screenshots": shotsDir(t, dir),
	})
	// The Allow clicked in the browser reached the agent's tool.
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "allowed\n" {
		t.Errorf("notes.txt after the allowed Write: %q %v", b, err)
	}
	if n := srv.Pending(); n != 0 {
		t.Errorf("%d scripted replies were never asked for", n)
	}
}
