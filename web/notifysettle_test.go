package web_test

import (
	"net"
	"path/filepath"
	"sync"
	"testing"
)

// silentServer accepts TCP connections on loopback and never answers:
// a push service that does not reply. It returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read from or written to
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// TestBrowserNotificationsSettle: with notifications allowed and a push
// service that never answers (Chromium's GCM endpoints pointed at a
// loopback server that accepts and stays silent), turning the
// Notifications switch on settles within 15 s to off, saying why, on
// 390×844 and 1280×800, dark and light (web/e2e/notifysettle.mjs).
func TestBrowserNotificationsSettle(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"README.md": "# push\n"})
	silent := "http://" + silentServer(t)
	db := filepath.Join(dir, "ferry.db")
	env := upEnv(dir, "")
	base, login := ferryUp(t, env, "--db", db, "--workspace", ws, "--push-allow-loopback")
	// One login link for each of the four browser profiles.
	logins := []string{login}
	for range 3 {
		tok, err := newLogin(env, db)
		if err != nil {
			t.Fatal(err)
		}
		logins = append(logins, base+"/login?token="+tok)
	}
	runScript(t, node, "notifysettle.mjs", map[string]any{"base": base, "logins": logins, "chromium": chromium,
		"chromiumArgs": []string{"--gcm-checkin-url=" + silent + "/checkin", "--gcm-registration-url=" + silent + "/register",
			"--gcm-mcs-endpoint=" + silent},
		"screenshots": shotsDir(t, dir)})
}
