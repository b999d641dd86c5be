package web_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// signinLooks are the screens the sign-in test runs on (web/e2e/signin.mjs).
var signinLooks = []string{"phone-dark", "phone-light", "desktop-dark", "desktop-light"}

// TestBrowserTwoMasters: issue 32 item 4. Two real `ferry up` on two
// loopback ports and one headless Chromium profile, which sends
// 127.0.0.1's cookies to both: signed in to the first and then the
// second, the first stays signed in, also after a reload; when a sign-in
// really ends, the page says why: revoked (its token revoked with `ferry
// token revoke`) or this browser's key gone (its localStorage cleared).
// On 390×844 and 1280×800, dark and light (web/e2e/signin.mjs).
func TestBrowserTwoMasters(t *testing.T) {
	node, chromium := browserDeps(t)
	type up struct{ base, db string }
	ups := map[string]up{}
	env := map[string]map[string]string{}
	for _, name := range []string{"a", "b"} {
		dir := t.TempDir()
		ws := project(t, dir, map[string]string{"README.md": "# " + name + "\n"})
		db := filepath.Join(dir, "ferry.db")
		env[name] = upEnv(dir, "")
		base, _ := ferryUp(t, env[name], "--db", db, "--workspace", ws)
		ups[name] = up{base, db}
	}
	// One login link per master and look, its token named after the look
	// (the UI token a login turns into keeps the name).
	logins := map[string]map[string]string{}
	for name, u := range ups {
		logins[name] = map[string]string{}
		for _, look := range signinLooks {
			out, err := ferryCLI(env[name], "token", "create", "--kind", "login", "--name", look, "--master", u.base, "--db", u.db)
			if err != nil {
				t.Fatal(err)
			}
			_, link, _ := strings.Cut(strings.TrimSpace(out), "\n")
			logins[name][look] = link
		}
	}
	var mu sync.Mutex
	ctl := http.NewServeMux()
	// /revoke?master=a&look=phone-dark revokes that look's UI token there.
	ctl.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name, look := r.URL.Query().Get("master"), r.URL.Query().Get("look")
		u := ups[name]
		list, err := ferryCLI(env[name], "token", "list", "--db", u.db)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			cols := strings.Split(line, "\t")
			if len(cols) > 2 && cols[1] == "ui" && cols[2] == look {
				if _, err := ferryCLI(env[name], "token", "revoke", "--db", u.db, cols[0]); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				n++
			}
		}
		_, _ = fmt.Fprint(w, n)
	})
	runScriptWithin(t, 240*time.Second, node, "signin.mjs", map[string]any{"a": ups["a"].base, "b": ups["b"].base, "logins": logins,
		"looks": signinLooks, "control": serveControl(t, ctl), "chromium": chromium, "screenshots": shotsDir(t, t.TempDir())})
}
