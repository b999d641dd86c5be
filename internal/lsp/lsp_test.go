package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/lsp/lsptest"
)

func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "lsp-fake" {
		fakeServer(os.Args[2], os.Args[3])
		return
	}
	os.Exit(m.Run())
}

// fake returns a Manager on a temporary workspace whose .go files are
// served by the fake server in mode, and the fake's start log.
func fake(t *testing.T, mode string, cfg Config) (*Manager, string, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "starts")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers == nil {
		cfg.Servers = map[string]ServerConfig{}
	}
	cfg.Servers[".go"] = ServerConfig{Command: []string{exe, "lsp-fake", mode, logFile}, WaitMS: cfg.Servers[".go"].WaitMS}
	m := NewManager(root, cfg, nil)
	t.Cleanup(m.Close)
	return m, root, logFile
}

// starts lists the pids of the fake's starts.
func starts(t *testing.T, logFile string) []int {
	t.Helper()
	data, err := os.ReadFile(logFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for line := range strings.Lines(string(data)) {
		pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "start ")))
		if err != nil {
			t.Fatalf("start log line %q", line)
		}
		pids = append(pids, pid)
	}
	return pids
}

func diagnose(t *testing.T, m *Manager, path, content string) (string, time.Duration) {
	t.Helper()
	begin := time.Now()
	out, err := m.Diagnostics(context.Background(), path, []byte(content))
	if err != nil {
		t.Fatalf("Diagnostics: %v", err)
	}
	return out, time.Since(begin)
}

// TestErrorsThenNone: an edit that makes an error gets it, with the
// header, the position and one line of message; the next one that
// fixes it gets "". A stale publish of the previous version is not
// taken for the new one, and the whole new text reaches the server.
func TestErrorsThenNone(t *testing.T) {
	t.Parallel()
	m, root, _ := fake(t, "ok", Config{WaitMS: 20000})
	path := filepath.Join(root, "pkg", "a.go")
	out, _ := diagnose(t, m, path, "package a\n")
	if out != "" {
		t.Fatalf("clean file: %q", out)
	}
	out, _ = diagnose(t, m, path, "package a\n\tERR here\n// WARN there\n")
	want := "lsp.test reports 1 error in " + filepath.Join("pkg", "a.go") + " after this change:\n" +
		filepath.Join("pkg", "a.go") + ":2:2: fake err second line"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	out, _ = diagnose(t, m, path, "package a\n")
	if out != "" {
		t.Fatalf("after the fix: %q", out)
	}
}

// TestWarningsWhenAsked: severity "warning" adds warnings, marked so.
func TestWarningsWhenAsked(t *testing.T) {
	t.Parallel()
	m, root, _ := fake(t, "noversion", Config{WaitMS: 20000, Severity: SeverityWarning})
	out, _ := diagnose(t, m, filepath.Join(root, "a.go"), "WARN\nx ERR\n")
	want := "lsp.test reports 1 error and 1 warning in a.go after this change:\n" +
		"a.go:1:1: warning: fake warn second line\na.go:2:3: fake err second line"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// TestCap: 50 errors give MaxLines lines and a count of the rest.
func TestCap(t *testing.T) {
	t.Parallel()
	m, root, _ := fake(t, "ok", Config{WaitMS: 20000})
	out, _ := diagnose(t, m, filepath.Join(root, "a.go"), strings.Repeat("ERR\n", 50))
	lines := strings.Split(out, "\n")
	if len(lines) != 1+DefaultMaxLines+1 || lines[len(lines)-1] != "… and 30 more" || !strings.HasPrefix(lines[0], "lsp.test reports 50 errors in a.go") {
		t.Fatalf("got %d lines:\n%s", len(lines), out)
	}
	for i, l := range lines[1 : 1+DefaultMaxLines] {
		if want := "a.go:" + strconv.Itoa(i+1) + ":1: "; !strings.HasPrefix(l, want) {
			t.Fatalf("line %d: %q, want the prefix %q", i+1, l, want)
		}
	}
}

// TestSlowServer: a server that never publishes costs the wait, then the
// result has no diagnostics; so does one that never answers initialize.
func TestSlowServer(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"slow", "hang-init"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			m, root, _ := fake(t, mode, Config{WaitMS: 300})
			for range 2 {
				out, took := diagnose(t, m, filepath.Join(root, "a.go"), "ERR\n")
				if out != "" || took > 2*time.Second || took < 250*time.Millisecond {
					t.Fatalf("got %q after %v, want \"\" after the 300ms wait", out, took)
				}
			}
			begin := time.Now()
			m.Close()
			if took := time.Since(begin); took > 5*time.Second {
				t.Fatalf("Close took %v", took)
			}
		})
	}
}

// TestCrashRestartLimit: a server that crashes at every document ends
// the wait at once, is started again at the next edit, and after
// MaxRestarts restarts is given up: no more starts.
func TestCrashRestartLimit(t *testing.T) {
	t.Parallel()
	m, root, logFile := fake(t, "crash", Config{WaitMS: 30000})
	for i := range MaxRestarts + 3 {
		out, took := diagnose(t, m, filepath.Join(root, "a.go"), "ERR\n")
		if out != "" || took > 10*time.Second {
			t.Fatalf("edit %d: got %q after %v, want \"\" well before the 30s wait", i, out, took)
		}
	}
	if n := len(starts(t, logFile)); n != MaxRestarts+1 {
		t.Fatalf("%d starts, want %d (the first and %d restarts)", n, MaxRestarts+1, MaxRestarts)
	}
}

// TestCloseKillsServer: Close ends the server process; later calls ask
// nobody.
func TestCloseKillsServer(t *testing.T) {
	t.Parallel()
	m, root, logFile := fake(t, "ok", Config{WaitMS: 20000})
	if out, _ := diagnose(t, m, filepath.Join(root, "a.go"), "ERR\n"); out == "" {
		t.Fatal("no diagnostics")
	}
	pids := starts(t, logFile)
	if len(pids) != 1 {
		t.Fatalf("starts: %v", pids)
	}
	m.Close()
	if err := syscall.Kill(pids[0], 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the server %d is still there after Close (kill 0: %v)", pids[0], err)
	}
	if out, _ := diagnose(t, m, filepath.Join(root, "a.go"), "ERR\n"); out != "" {
		t.Fatalf("after Close: %q", out)
	}
	if n := len(starts(t, logFile)); n != 1 {
		t.Fatalf("a server started after Close (%d starts)", n)
	}
}

// TestNoServerAsked: files outside the workspace, of other languages, or
// of a disabled one start nothing.
func TestNoServerAsked(t *testing.T) {
	t.Parallel()
	m, root, logFile := fake(t, "ok", Config{WaitMS: 20000})
	for _, p := range []string{filepath.Join(filepath.Dir(root), "x.go"), "rel.go", filepath.Join(root, "a.txt"), filepath.Join(root, "Makefile")} {
		if out, _ := diagnose(t, m, p, "ERR\n"); out != "" {
			t.Fatalf("%s: %q", p, out)
		}
	}
	off, root2, log2 := fake(t, "ok", Config{Disabled: true})
	if out, _ := diagnose(t, off, filepath.Join(root2, "a.go"), "ERR\n"); out != "" {
		t.Fatalf("disabled: %q", out)
	}
	if n := len(starts(t, logFile)) + len(starts(t, log2)); n != 0 {
		t.Fatalf("%d servers started", n)
	}
}

// TestDefaultTable: the default server of each language is found on PATH
// (the first of pyright's two), a user command replaces it, a disabled
// extension and a missing program give none.
func TestDefaultTable(t *testing.T) {
	t.Parallel()
	on := map[string]bool{"gopls": true, "pyright-langserver": true, "typescript-language-server": true}
	look := func(name string) (string, error) {
		if on[name] {
			return "/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	cfg := Config{Servers: map[string]ServerConfig{".ts": {Disabled: true}, ".vue": {Command: []string{"gopls"}}}}
	for ext, want := range map[string]string{
		".go": "/bin/gopls go", ".py": "/bin/pyright-langserver --stdio python", ".tsx": "/bin/typescript-language-server --stdio typescriptreact",
		".jsx": "/bin/typescript-language-server --stdio javascriptreact", ".ts": "", ".rs": "", ".vue": "/bin/gopls vue", ".c": "",
	} {
		got := ""
		if r := cfg.resolve(ext, look); r != nil {
			got = strings.Join(append(r.argv, r.languageID), " ")
		}
		if got != want {
			t.Errorf("%s: %q, want %q", ext, got, want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return dir
		}
		return ""
	}
	if c, err := LoadConfig(env); err != nil || c.Disabled || c.Servers != nil {
		t.Fatalf("no file: %+v, %v", c, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "ferry"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ferry", "lsp.json")
	for _, bad := range []string{`{`, `{"servers": {".go": {"comand": ["x"]}}}`, `{"severity": "hint"}`, `{"wait_ms": -1}`, `{"servers": {"go": {}}}`, `{"servers": {".go": {"command": [""]}}}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(env); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want ErrConfig naming the file", bad, err)
		}
	}
	good := `{"wait_ms": 5000, "servers": {".go": {"command": ["gopls", "-remote=auto"], "wait_ms": 60000}, ".py": {"disabled": true}}}`
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(env)
	if err != nil || c.WaitMS != 5000 || !c.Servers[".py"].Disabled || c.wait(c.Servers[".go"]) != time.Minute {
		t.Fatalf("%+v, %v", c, err)
	}
}

func TestByteColumn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line  string
		utf16 uint32
		want  int
	}{{"abc", 0, 1}, {"abc", 2, 3}, {"é=x", 1, 3}, {"😀x", 2, 5}, {"ab", 9, 3}} {
		if got := byteColumn([]byte(c.line), c.utf16); got != c.want {
			t.Errorf("%q at %d: %d, want %d", c.line, c.utf16, got, c.want)
		}
	}
}

// TestGopls: with the real gopls (pinned, lsptest.Gopls), a change that
// makes a type error gets it; the next change that fixes it gets none.
func TestGopls(t *testing.T) {
	t.Parallel()
	gopls := lsptest.Gopls(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good := "package main\n\nfunc main() {\n\tvar n int = 1\n\t_ = n\n}\n"
	lsptest.GoModule(t, root)
	if err := os.WriteFile(filepath.Join(root, "main.go"), []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewManager(root, Config{Servers: map[string]ServerConfig{".go": {Command: []string{gopls}, WaitMS: 120000}}}, nil)
	t.Cleanup(m.Close)
	path := filepath.Join(root, "main.go")
	bad := strings.Replace(good, "var n int = 1", `var n int = "one"`, 1)
	out, took := diagnose(t, m, path, bad)
	t.Logf("gopls answered in %v:\n%s", took, out)
	if !strings.HasPrefix(out, "gopls reports 1 error in main.go after this change:\nmain.go:4:14: ") || !strings.Contains(out, `cannot use "one"`) {
		t.Fatalf("the type error is not reported:\n%q", out)
	}
	out, took = diagnose(t, m, path, good)
	t.Logf("after the fix, in %v: %q", took, out)
	if out != "" {
		t.Fatalf("after the fix: %q", out)
	}
}

// TestAcquireShares: two holders of a workspace share its server; it
// lives until the last one releases it.
func TestAcquireShares(t *testing.T) {
	t.Parallel()
	m0, root, logFile := fake(t, "ok", Config{WaitMS: 20000})
	cfg := m0.cfg
	m0.Close()
	a, releaseA := Acquire(root, cfg, nil)
	b, releaseB := Acquire(root, cfg, nil)
	if a != b {
		t.Fatal("two holders of one workspace got two managers")
	}
	other, releaseOther := Acquire(t.TempDir(), cfg, nil)
	releaseOther()
	if other == a {
		t.Fatal("another workspace got the same manager")
	}
	if out, _ := diagnose(t, a, filepath.Join(root, "a.go"), "ERR\n"); out == "" {
		t.Fatal("no diagnostics through the first holder")
	}
	releaseA()
	releaseA() // idempotent: does not release b's hold
	if out, _ := diagnose(t, b, filepath.Join(root, "a.go"), "x\nERR\n"); !strings.Contains(out, "a.go:2:1:") {
		t.Fatalf("the second holder after the first released: %q", out)
	}
	pids := starts(t, logFile)
	if len(pids) != 1 {
		t.Fatalf("starts %v, want one server for both", pids)
	}
	releaseB()
	if err := syscall.Kill(pids[0], 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the server outlived its last holder (kill 0: %v)", err)
	}
}

// rust-analyzer must not run the repository's build scripts, procedural
// macros or cargo check on its own; a user's initialization_options
// replace that default, and other servers get none unless asked.
func TestRustAnalyzerRunsNoRepositoryCode(t *testing.T) {
	t.Parallel()
	look := func(name string) (string, error) { return "/bin/" + name, nil }
	r := Config{}.resolve(".rs", look)
	if r == nil {
		t.Fatal("no server for .rs")
	}
	var opts struct {
		Cargo struct {
			BuildScripts struct{ Enable *bool } `json:"buildScripts"`
		} `json:"cargo"`
		ProcMacro   struct{ Enable *bool } `json:"procMacro"`
		CheckOnSave *bool                  `json:"checkOnSave"`
	}
	if err := json.Unmarshal(r.initOpts, &opts); err != nil {
		t.Fatalf("rust-analyzer's options %s: %v", r.initOpts, err)
	}
	for name, v := range map[string]*bool{"cargo.buildScripts.enable": opts.Cargo.BuildScripts.Enable, "procMacro.enable": opts.ProcMacro.Enable, "checkOnSave": opts.CheckOnSave} {
		if v == nil || *v {
			t.Errorf("%s is not false in %s", name, r.initOpts)
		}
	}
	own := json.RawMessage(`{"checkOnSave":true}`)
	if r := (Config{Servers: map[string]ServerConfig{".rs": {InitializationOptions: own}}}).resolve(".rs", look); string(r.initOpts) != string(own) {
		t.Errorf("the user's options became %s", r.initOpts)
	}
	if r := (Config{}).resolve(".go", look); r.initOpts != nil {
		t.Errorf("gopls gets options %s", r.initOpts)
	}
}

// FuzzLoadConfig: whatever lsp.json holds, LoadConfig gives a config or
// an ErrConfig naming the file, never a panic; a config it accepts
// waits a positive time of at most MaxWaitMS for every extension.
func FuzzLoadConfig(f *testing.F) {
	f.Add(`{"servers": {".go": {"command": ["gopls"], "wait_ms": 5000}}, "severity": "warning"}`)
	f.Add(`{"wait_ms": 9999999999999}`)
	f.Add(`{"servers": {"go": {}}}`)
	f.Add(`{"disabled": true, "max_lines": 3}`)
	f.Add(`{"servers": {".rs": {"initialization_options": {"checkOnSave": true}, "language_id": "rust"}}}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, data string) {
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, "ferry"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "ferry", "lsp.json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return home
			}
			return ""
		})
		if err != nil {
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "lsp.json") {
				t.Fatalf("error %v: not ErrConfig naming the file", err)
			}
			return
		}
		for ext, s := range c.Servers {
			if w := c.wait(s); w <= 0 || w > MaxWaitMS*time.Millisecond {
				t.Fatalf("%s waits %v", ext, w)
			}
		}
		if w := c.wait(ServerConfig{}); w <= 0 || w > MaxWaitMS*time.Millisecond {
			t.Fatalf("the default wait is %v", w)
		}
	})
}
