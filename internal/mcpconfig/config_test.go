package mcpconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/mcpclient"
	"github.com/ferry-dev/ferry/internal/mcpconfig"
)

// TestParseClaudeCodeFormat: the .mcp.json Claude Code writes gives the
// stdio and HTTP servers it names, sorted by name.
func TestParseClaudeCodeFormat(t *testing.T) {
	got, err := mcpconfig.Parse([]byte(`{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": {"DEBUG": "1"}},
    "api": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    "local": {"type": "stdio", "command": "./server", "cwd": "tools"}
  }
}`), ".mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []mcpclient.Server{
		{Name: "api", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}, Env: map[string]string{"DEBUG": "1"}},
		{Name: "local", Command: "./server", Cwd: "tools"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestParseRefusesBadInput: every kind of bad input is a coded *Error
// naming the file, the server and the field; a bad entry leaves the good
// ones usable.
func TestParseRefusesBadInput(t *testing.T) {
	cases := []struct {
		name, in, code, server, field, says string
	}{
		{"not json", `{"mcpServers": {`, mcpconfig.CodeSyntax, "", "", "line 1"},
		{"array", `[]`, mcpconfig.CodeShape, "", "", "mcpServers"},
		{"null", `null`, mcpconfig.CodeShape, "", "", "null"},
		{"no key", `{"servers": {}}`, mcpconfig.CodeShape, "", "", `no "mcpServers"`},
		{"servers not object", `{"mcpServers": []}`, mcpconfig.CodeShape, "", "", "object of servers"},
		{"entry not object", `{"mcpServers": {"a": "npx"}}`, mcpconfig.CodeServer, "a", "", "must be an object"},
		{"no command", `{"mcpServers": {"a": {"args": ["x"]}}}`, mcpconfig.CodeServer, "a", "command", "missing"},
		{"command not string", `{"mcpServers": {"a": {"command": ["npx"]}}}`, mcpconfig.CodeServer, "a", "command", "must be a string"},
		{"args not strings", `{"mcpServers": {"a": {"command": "x", "args": [1]}}}`, mcpconfig.CodeServer, "a", "args", "array of strings"},
		{"env not strings", `{"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}`, mcpconfig.CodeServer, "a", "env", "string values"},
		{"env bad name", `{"mcpServers": {"a": {"command": "x", "env": {"A=B": "1"}}}}`, mcpconfig.CodeServer, "a", "env", "bad variable"},
		{"url without type", `{"mcpServers": {"a": {"url": "https://x"}}}`, mcpconfig.CodeServer, "a", "type", `"type": "http"`},
		{"http without url", `{"mcpServers": {"a": {"type": "http"}}}`, mcpconfig.CodeServer, "a", "url", "missing"},
		{"http bad url", `{"mcpServers": {"a": {"type": "http", "url": "file:///etc/passwd"}}}`, mcpconfig.CodeServer, "a", "url", "no http://"},
		{"http with command", `{"mcpServers": {"a": {"type": "http", "url": "https://x", "command": "y"}}}`, mcpconfig.CodeServer, "a", "command", "takes no command"},
		{"stdio with url", `{"mcpServers": {"a": {"command": "y", "url": "https://x"}}}`, mcpconfig.CodeServer, "a", "url", "takes no url"},
		{"bad header", `{"mcpServers": {"a": {"type": "http", "url": "https://x", "headers": {"X": "a\nb"}}}}`, mcpconfig.CodeServer, "a", "headers", "bad header"},
		{"sse", `{"mcpServers": {"a": {"type": "sse", "url": "https://x/sse"}}}`, mcpconfig.CodeUnsupported, "a", "type", "SSE"},
		{"unknown type", `{"mcpServers": {"a": {"type": "ws", "url": "wss://x"}}}`, mcpconfig.CodeServer, "a", "type", "unknown type"},
		{"empty name", `{"mcpServers": {"": {"command": "x"}}}`, mcpconfig.CodeServer, "", "", "empty"},
		{"control in name", `{"mcpServers": {"a\u0007": {"command": "x"}}}`, mcpconfig.CodeServer, "a\a", "", "control"},
		{"NUL in arg", `{"mcpServers": {"a": {"command": "x", "args": ["\u0000"]}}}`, mcpconfig.CodeServer, "a", "", "NUL"},
		{"too large", `{"mcpServers": {"a": {"command": "` + strings.Repeat("x", mcpconfig.MaxFileSize) + `"}}}`, mcpconfig.CodeTooLarge, "", "", "KB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A good server beside the bad one stays usable.
			in := c.in
			if c.server != "" || c.code == mcpconfig.CodeServer {
				in = strings.Replace(in, `{"mcpServers": {`, `{"mcpServers": {"good": {"command": "ok"}, `, 1)
			}
			servers, err := mcpconfig.Parse([]byte(in), "/ws/.mcp.json")
			var e *mcpconfig.Error
			if !errors.As(err, &e) || !errors.Is(err, mcpconfig.ErrBadConfig) {
				t.Fatalf("error %v (%T), want a *mcpconfig.Error", err, err)
			}
			if e.Code != c.code || e.Server != c.server || e.Field != c.field || !strings.Contains(e.Error(), c.says) || !strings.Contains(e.Error(), "/ws/.mcp.json") {
				t.Fatalf("got code %q server %q field %q: %v", e.Code, e.Server, e.Field, e)
			}
			if e.Code == mcpconfig.CodeServer || e.Code == mcpconfig.CodeUnsupported {
				if len(servers) != 1 || servers[0].Name != "good" {
					t.Fatalf("the good server was not kept: %+v", servers)
				}
			} else if len(servers) != 0 {
				t.Fatalf("servers from a bad file: %+v", servers)
			}
		})
	}
}

// FuzzParse: any input gives servers that mcpclient can be asked to
// connect (a name, exactly one of command and url) or a *Error, never a
// panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"}}}}`,
		`{"mcpServers":{"b":{"type":"http","url":"https://h/mcp","headers":{"A":"b"}}}}`,
		`{"mcpServers":{"c":{"type":"sse","url":"https://h/sse"}}}`,
		`{"mcpServers":{}}`, `{}`, `[]`, `null`, `{"mcpServers":{"a":{"url":"${X}"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := mcpconfig.Parse(data, "f.json")
		if err != nil && !errors.Is(err, mcpconfig.ErrBadConfig) {
			t.Fatalf("uncoded error %v", err)
		}
		for _, s := range servers {
			if s.Name == "" || (s.Command == "") == (s.URL == "") {
				t.Fatalf("unusable server %+v", s)
			}
		}
		_ = mcpconfig.Describe(servers)
	})
}

// TestExpandAfterParse: variables are expanded from the environment, with
// defaults; an unset one leaves that server out with CodeEnv.
func TestExpandAfterParse(t *testing.T) {
	servers, err := mcpconfig.Parse([]byte(`{"mcpServers": {
		"a": {"command": "${BIN:-srv}", "args": ["--key", "${KEY}"]},
		"b": {"command": "x", "env": {"T": "${MISSING}"}}}}`), "m.json")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KEY": "k1"}
	got, err := mcpconfig.Expand(servers, "m.json", func(k string) string { return env[k] })
	var e *mcpconfig.Error
	if !errors.As(err, &e) || e.Code != mcpconfig.CodeEnv || e.Server != "b" || !strings.Contains(e.Error(), "MISSING") {
		t.Fatalf("err %v", err)
	}
	if len(got) != 1 || got[0].Command != "srv" || got[0].Args[1] != "k1" {
		t.Fatalf("got %+v", got)
	}
}

// TestApprovalsKeyedByContent: a decision holds for one workspace and one
// content; the file is 0600; a damaged file is an error and stays.
func TestApprovalsKeyedByContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "ferry", mcpconfig.ApprovalsFile)
	a := mcpconfig.OpenApprovals(path)
	sum1, sum2 := mcpconfig.Sum([]byte("one")), mcpconfig.Sum([]byte("two"))
	if d, err := a.Decision("/ws", sum1); err != nil || d != mcpconfig.Unknown {
		t.Fatalf("fresh: %q %v", d, err)
	}
	if err := a.Set("/ws", sum1, mcpconfig.Approved); err != nil {
		t.Fatal(err)
	}
	if err := a.Set("/ws", sum2, mcpconfig.Never); err != nil {
		t.Fatal(err)
	}
	b := mcpconfig.OpenApprovals(path) // another process's view
	for _, c := range []struct {
		ws, sum string
		want    mcpconfig.Decision
	}{{"/ws", sum1, mcpconfig.Approved}, {"/ws", sum2, mcpconfig.Never}, {"/other", sum1, mcpconfig.Unknown}} {
		if d, err := b.Decision(c.ws, c.sum); err != nil || d != c.want {
			t.Fatalf("%s %s: %q %v, want %q", c.ws, c.sum[:8], d, err, c.want)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("approvals file mode %v %v", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := os.WriteFile(path, []byte("{damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Decision("/ws", sum1); !errors.Is(err, mcpconfig.ErrBadConfig) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged file read: %v", err)
	}
	if err := a.Set("/ws", sum1, mcpconfig.Approved); err == nil {
		t.Fatal("a damaged approvals file was overwritten")
	}
	if got, _ := os.ReadFile(path); string(got) != "{damaged" {
		t.Fatalf("damaged file changed: %q", got)
	}
}

// TestLoadBothFiles: the user's file is read and expanded; the workspace's
// is found with its content's sum and decision; a changed file has a new
// sum and no decision.
func TestLoadBothFiles(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "TOK": "t"}
	src, err := mcpconfig.DefaultSources(ws, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "config", "ferry"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "ferry", "mcp.json"), []byte(`{"mcpServers":{"mine":{"command":"srv","args":["${TOK}"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	l := src.Load()
	if len(l.Problems) != 0 || l.Workspace != nil || len(l.User) != 1 || l.User[0].Args[0] != "t" {
		t.Fatalf("user only: %+v", l)
	}
	content := []byte(`{"mcpServers":{"repo":{"command":"npx","args":["evil"]}}}`)
	if err := os.WriteFile(filepath.Join(ws, ".mcp.json"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	l = src.Load()
	if l.Workspace == nil || l.Workspace.SHA256 != mcpconfig.Sum(content) || l.Workspace.Decision != mcpconfig.Unknown || len(l.Workspace.Servers) != 1 {
		t.Fatalf("workspace: %+v", l.Workspace)
	}
	if err := src.Approvals.Set(ws, l.Workspace.SHA256, mcpconfig.Approved); err != nil {
		t.Fatal(err)
	}
	if l = src.Load(); l.Workspace.Decision != mcpconfig.Approved {
		t.Fatalf("after approval: %+v", l.Workspace)
	}
	if err := os.WriteFile(filepath.Join(ws, ".mcp.json"), append(content, ' '), 0o600); err != nil {
		t.Fatal(err)
	}
	if l = src.Load(); l.Workspace.Decision != mcpconfig.Unknown {
		t.Fatalf("a changed file kept the approval: %+v", l.Workspace)
	}
}
