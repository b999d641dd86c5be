package mcpserver_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func connect(ctx context.Context, t *testing.T, bin, workspace string, extra ...string) *mcp.ClientSession {
	t.Helper()
	args := append([]string{"mcp", "--workspace", workspace, "--history", filepath.Join(t.TempDir(), "history")}, extra...)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "ferry-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to ferry mcp: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (text string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestMCPEndToEnd drives `ferry mcp` as a real MCP client over stdio.
func TestMCPEndToEnd(t *testing.T) {
	bin := binarytest.Build(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connect(ctx, t, bin, ws)

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("%s lacks a description or schema", tool.Name)
		}
		if ro := tool.Annotations != nil && tool.Annotations.ReadOnlyHint; ro != slices.Contains([]string{"Read", "Glob", "Grep"}, tool.Name) {
			t.Errorf("%s: readOnlyHint %v", tool.Name, ro)
		}
	}
	slices.Sort(names)
	if want := []string{"Edit", "Glob", "Grep", "MultiEdit", "NotebookEdit", "Read", "Write"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	// The contract holds over MCP: no write before a read.
	text, isErr := call(ctx, t, cs, "Edit", map[string]any{"file_path": "main.go", "old_string": "hi", "new_string": "hello"})
	if !isErr || !strings.Contains(text, "code 2") {
		t.Fatalf("Edit before Read: error %v, %q", isErr, text)
	}
	text, isErr = call(ctx, t, cs, "Read", map[string]any{"file_path": "main.go"})
	if isErr || !strings.Contains(text, "println(\"hi\")") {
		t.Fatalf("Read: error %v, %q", isErr, text)
	}
	text, isErr = call(ctx, t, cs, "Edit", map[string]any{"file_path": "main.go", "old_string": "\"hi\"", "new_string": "\"hello\""})
	if isErr {
		t.Fatalf("Edit after Read: %q", text)
	}
	got, _ := os.ReadFile(filepath.Join(ws, "main.go"))
	if !strings.Contains(string(got), "println(\"hello\")") {
		t.Fatalf("file after Edit: %q", got)
	}

	// Someone else changes the file: the next write is refused as stale.
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n// changed by the user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, isErr = call(ctx, t, cs, "Write", map[string]any{"file_path": "main.go", "content": "package main\n"})
	if !isErr || !strings.Contains(text, "code 3") {
		t.Fatalf("Write of a stale file: error %v, %q", isErr, text)
	}

	// Search tools.
	text, isErr = call(ctx, t, cs, "Glob", map[string]any{"pattern": "**/*.go"})
	if isErr || !strings.Contains(text, "main.go") {
		t.Fatalf("Glob: error %v, %q", isErr, text)
	}
	text, isErr = call(ctx, t, cs, "Grep", map[string]any{"pattern": "changed by", "output_mode": "content"})
	if isErr || !strings.Contains(text, "changed by the user") {
		t.Fatalf("Grep: error %v, %q", isErr, text)
	}

	// Confinement and bad input are tool errors, not protocol failures.
	if text, isErr = call(ctx, t, cs, "Read", map[string]any{"file_path": "../../etc/passwd"}); !isErr || !strings.Contains(text, "code 5") {
		t.Fatalf("Read outside: error %v, %q", isErr, text)
	}
	if text, isErr = call(ctx, t, cs, "Read", map[string]any{"file_path": "main.go", "bogus": 1}); !isErr || !strings.Contains(text, "code 1") {
		t.Fatalf("Read with an unknown field: error %v, %q", isErr, text)
	}
	if text, isErr = call(ctx, t, cs, "Read", map[string]any{"file_path": "/dev/zero"}); !isErr || !strings.Contains(text, "code 6") {
		t.Fatalf("Read /dev/zero: error %v, %q", isErr, text)
	}
}

// TestMCPReadStatePerConnection: a Read on one connection does not let
// another connection write.
func TestMCPReadStatePerConnection(t *testing.T) {
	bin := binarytest.Build(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := connect(ctx, t, bin, ws)
	b := connect(ctx, t, bin, ws)
	if text, isErr := call(ctx, t, a, "Read", map[string]any{"file_path": "notes.txt"}); isErr {
		t.Fatalf("Read on a: %q", text)
	}
	if text, isErr := call(ctx, t, b, "Write", map[string]any{"file_path": "notes.txt", "content": "two\n"}); !isErr || !strings.Contains(text, "code 2") {
		t.Fatalf("Write on b without its own Read: error %v, %q", isErr, text)
	}
	if text, isErr := call(ctx, t, a, "Write", map[string]any{"file_path": "notes.txt", "content": "two\n"}); isErr {
		t.Fatalf("Write on a after its Read: %q", text)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(got) != "two\n" {
		t.Fatalf("content %q", got)
	}
}

func TestMCPBadWorkspace(t *testing.T) {
	bin := binarytest.Build(t)
	out, err := exec.Command(bin, "mcp", "--workspace", filepath.Join(t.TempDir(), "missing")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "workspace") {
		t.Fatalf("a missing workspace must fail clearly: %v %q", err, out)
	}
}
