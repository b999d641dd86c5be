package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	bin := binarytest.Build(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.go"), "package a\n")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"Glob","arguments":{"pattern":"*.go"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--workspace", dir, "--no-history")
	cmd.Stdin = strings.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ferry mcp: %v, stderr %s", err, stderr.String())
	}
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
		t.Fatalf("answered ids %s, want [1,2,3,4]; stdout:\n%s\nstderr:\n%s", got, out, stderr.String())
	}
}
