package web_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/push/pushtest"
)

// TestBrowserPush: in headless Chromium against a real `ferry up` (the
// built-in agent on the fake model, --push-allow-loopback), a
// subscription registered through the API with keys this test made gets
// the permission the agent asks while the page shows another view; the
// stand-in push service checks its VAPID signature and decrypts it; the
// payload is delivered to the real service worker through the DevTools
// protocol, which shows the notification with Allow and Deny; its Allow
// (the worker's click handler) answers the permission and the Edit runs.
// The per-device switch says clearly what happened (web/e2e/push.mjs).
func TestBrowserPush(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"src/auth.ts": "return t == expected\n"})
	target := filepath.Join(ws, "src", "auth.ts")
	model := fake.New(t)
	slow := make([]string, 8)
	for i := range slow {
		slow[i] = "thinking it over. "
	}
	model.Script(
		fake.Reply{Text: slow, Delay: 250 * time.Millisecond,
			ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "src/auth.ts"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "src/auth.ts",
			"old_string": "t == expected", "new_string": "t === expected", "artifact": false}}}},
		fake.Reply{Text: []string{"Fixed the comparison."}},
	)
	svc := pushtest.New(t)
	sub := svc.Subscribe()
	base, login := ferryUp(t, upEnv(dir, model.URL()), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin",
		"--push-allow-loopback")
	runScript(t, node, "push.mjs", map[string]any{"base": base, "login": login, "chromium": chromium,
		"endpoint": sub.Endpoint, "p256dh": pushtest.B64(sub.P256dh), "auth": pushtest.B64(sub.Auth),
		"messages": svc.URL + "/messages", "screenshots": shotsDir(t, dir)})
	// What the push service decrypted is the permission, and nothing of
	// the file.
	msgs := svc.Messages()
	if len(msgs) == 0 {
		t.Fatal("the push service got no notification")
	}
	var p map[string]string
	if err := json.Unmarshal(msgs[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p["kind"] != "permission" || p["tool"] != "Edit" || p["file"] != "auth.ts" || p["session_title"] != "Push test" ||
		!strings.HasPrefix(p["url"], "/#/s/") || msgs[0].Urgency != "high" {
		t.Fatalf("first notification %v (urgency %q)", p, msgs[0].Urgency)
	}
	if bytes.Contains(msgs[0].Payload, []byte("expected")) {
		t.Fatalf("the payload carries file content: %s", msgs[0].Payload)
	}
	// Allow from the notification let the Edit run.
	got, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "return t === expected\n" {
		t.Fatalf("src/auth.ts = %q, want the allowed edit", got)
	}
}
