package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
)

// TestMCPPipedRequests: requests piped on stdin are all answered (in any
// order, as JSON-RPC allows) before ferry mcp exits at the end of its input.
func TestMCPPipedRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.go"), "package a\n")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"Glob","arguments":{"pattern":"*.go"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	out, stderr := runMCPBinary(t, dir, in)
	var ids []float64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var msg struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if msg.ID == nil || msg.Error != nil {
			t.Fatalf("not an answer: %s", sc.Text())
		}
		if *msg.ID == 3 && !strings.Contains(string(msg.Result), "a.go") {
			t.Fatalf("Glob answer %s", msg.Result)
		}
		ids = append(ids, *msg.ID)
	}
	slices.Sort(ids)
	if got, _ := json.Marshal(ids); string(got) != "[1,2,3,4]" {
		t.Fatalf("answered ids %s, want [1,2,3,4]; stdout:\n%s\nstderr:\n%s", got, out, stderr)
	}
}

// runMCPBinary pipes in to the real `ferry mcp` on dir and returns its
// standard output; the server must exit 0 at the end of its input.
func runMCPBinary(t *testing.T, dir, in string) (stdout []byte, stderr string) {
	t.Helper()
	bin := binarytest.Build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--workspace", dir, "--no-history")
	cmd.Stdin = strings.NewReader(in)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ferry mcp: %v (stdout %s, stderr %s)", err, out, errb.String())
	}
	return out, errb.String()
}

// mcpAnswer is one line ferry mcp wrote, as a JSON-RPC response.
type mcpAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestMCPBadLinesAnswered: a malformed line, an invalid request object, a
// batch and an unknown or early method each get their JSON-RPC error (parse
// error -32700 with id null, invalid request -32600, method not found
// -32601; never code 0), and the server carries on answering what follows.
func TestMCPBadLinesAnswered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type want struct {
		id   string // the answer's id, as JSON
		code int    // 0: a result
	}
	cases := []struct {
		line string
		want want
	}{
		{`{"jsonrpc":"2.0","id":10,"method":"bogus"}`, want{"10", -32601}}, // unknown, before initialize
		{`{"jsonrpc":"2.0","id":11,"method":"tools/list"}`, want{"11", -32600}},
		{`{"jsonrpc":"2.0","id":12,"method":"ping"}`, want{"12", 0}},
		{`not json`, want{"null", -32700}},
		{`{"jsonrpc":"2.0","id":13,"method":"ping"`, want{"null", -32700}},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, want{"1", 0}},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, want{}},
		{`{} {}`, want{"null", -32700}},
		{`[1]`, want{"null", -32600}},
		{`[]`, want{"null", -32600}},
		{`[{"jsonrpc":"2.0","id":20,"method":"ping"}]`, want{"null", -32600}}, // batches left MCP in 2025-06-18
		{`{"jsonrpc":"1.0","id":21,"method":"ping"}`, want{"21", -32600}},
		{`{"id":22,"method":"ping"}`, want{"22", -32600}},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, want{"null", -32600}},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, want{"null", -32600}},
		{`{"jsonrpc":"2.0","id":23,"method":7}`, want{"23", -32600}},
		{`{"jsonrpc":"2.0","id":24,"method":"ping","params":"x"}`, want{"24", -32600}},
		{`{"jsonrpc":"2.0"}`, want{"null", -32600}},
		{`"just a string"`, want{"null", -32600}},
		{"\xff\xfe", want{"null", -32700}},
		{`{"jsonrpc":"2.0","id":2,"method":"bogus/after"}`, want{"2", -32601}},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"Glob","arguments":{"pattern":"*"}}}`, want{"3", 0}},
		{`{"jsonrpc":"2.0","id":"last","method":"ping"}`, want{`"last"`, 0}},
	}
	var in strings.Builder
	var wants []want
	for _, c := range cases {
		in.WriteString(c.line + "\n")
		if c.want.id != "" {
			wants = append(wants, c.want)
		}
	}
	out, stderr := runMCPBinary(t, dir, in.String())
	var got []want
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var a mcpAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.JSONRPC != "2.0" {
			t.Fatalf("not a JSON-RPC answer %q: %v", line, err)
		}
		w := want{id: string(a.ID)}
		if a.Error != nil {
			w.code = a.Error.Code
			if a.Error.Code == 0 || a.Error.Message == "" {
				t.Errorf("answer %s: error without a code or message", line)
			}
		}
		got = append(got, w)
	}
	// Answers may come in any order (JSON-RPC allows it): compare as sets.
	key := func(w want) string { return fmt.Sprintf("%s:%d", w.id, w.code) }
	sortWants := func(ws []want) []string {
		ks := make([]string, len(ws))
		for i, w := range ws {
			ks[i] = key(w)
		}
		slices.Sort(ks)
		return ks
	}
	if g, w := sortWants(got), sortWants(wants); !slices.Equal(g, w) {
		t.Fatalf("answers (id:code)\n got %v\nwant %v\nstdout:\n%s\nstderr:\n%s", g, w, out, stderr)
	}
}
