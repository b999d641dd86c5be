package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The Go side of the browser tests' harness (web/e2e/harness.mjs is the
// Node side): finding node and Chromium, the workspace and environment of
// the `ferry up` under test, where screenshots go, and running a script in
// web/e2e with its config file and a bound on its time.

var screenshots = flag.String("screenshots", "", "write the browser test's screenshots to this `DIR` (the README's are in ../docs/screenshots)")

// browserTimeout bounds the whole browser run.
const browserTimeout = 150 * time.Second

const installHelp = "the browser tests need Node.js, playwright-core and Chromium: " +
	"apt-get install -y chromium nodejs npm && npm ci --prefix web " +
	"(or set FERRY_CHROMIUM to a Chromium binary); set FERRY_REQUIRE_BROWSER=1 to fail instead of skipping"

// browserDeps finds node, playwright-core and Chromium, or skips the test
// (fails it when FERRY_REQUIRE_BROWSER is set).
func browserDeps(t *testing.T) (node, chromium string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("FERRY_REQUIRE_BROWSER") != "" {
			t.Fatalf("%s is missing; %s", what, installHelp)
		}
		t.Skipf("%s is missing; %s", what, installHelp)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	for _, pkg := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			missing("web/node_modules/" + pkg)
		}
	}
	chromium = os.Getenv("FERRY_CHROMIUM")
	if chromium == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				chromium = p
				break
			}
		}
	}
	if chromium == "" {
		missing("chromium")
	}
	return node, chromium
}

// project makes the workspace dir/project holding files (slash-separated
// paths to their content) and returns its path.
func project(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	ws := filepath.Join(dir, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// upEnv is the environment of a `ferry up` a browser test starts: its
// data, state and home under dir and the PATH, so that nothing of the
// user's is read or written; with model (a fake Anthropic server's URL,
// "" for none) the agent's model provider too.
func upEnv(dir, model string) map[string]string {
	env := map[string]string{
		"XDG_DATA_HOME": filepath.Join(dir, "data"), "XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir,
		"PATH": os.Getenv("PATH"),
	}
	if model != "" {
		env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"] = model, "test-key"
	}
	return env
}

// serveControl serves h on loopback until the test ends and returns its
// base URL: the config's "control", where a script asks for what only Go
// can do (harness.mjs's control).
func serveControl(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

// shotsDir is where a browser test writes its screenshots: -screenshots
// when given (made absolute: the docs' are in ../docs/screenshots), else
// the test's own directory dir.
func shotsDir(t *testing.T, dir string) string {
	t.Helper()
	if *screenshots == "" {
		return filepath.Join(dir, "screenshots")
	}
	abs, err := filepath.Abs(*screenshots)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// runScript writes cfg for the browser script e2e/<script> and runs it
// under Node within browserTimeout.
func runScript(t *testing.T, node, script string, cfg map[string]any) {
	t.Helper()
	runScriptWithin(t, browserTimeout, node, script, cfg)
}

// runScriptWithin is runScript with its own bound on the run's time.
func runScriptWithin(t *testing.T, timeout time.Duration, node, script string, cfg map[string]any) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", script), cfgPath)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("browser run of e2e/%s (%s):\n%s", script, time.Since(start).Round(time.Millisecond), out.String())
	if runErr != nil {
		t.Fatalf("the browser run of e2e/%s failed: %v", script, runErr)
	}
}
