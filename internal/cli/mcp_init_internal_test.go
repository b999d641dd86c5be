package cli

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
)

// BenchmarkMCPInitialize is ferry mcp from runMCP's start to the answer
// to initialize, in process (the process start-up is not in it), over a
// workspace of this repository: go test ./internal/cli -run '^$' -bench
// MCPInitialize. The first run also starts the workspace's sweep of
// leftover temporary files, which runs beside the server, not before it.
func BenchmarkMCPInitialize(b *testing.B) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"
	for b.Loop() {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- runMCP(ctx, Env{Stdin: inR, Stdout: outW, Stderr: io.Discard}, []string{"--workspace", "../..", "--no-history"})
		}()
		go func() { _, _ = io.WriteString(inW, initialize) }()
		line, err := bufio.NewReader(outR).ReadString('\n')
		if err != nil || !strings.Contains(line, `"serverInfo"`) {
			b.Fatalf("initialize answered %q, %v", line, err)
		}
		_ = inW.Close()
		cancel()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
