// Command testserver is the MCP server mcpclient's tests run over stdio
// (and, through Handler, over HTTP in-process). Modes by the first
// argument:
//
//	(none)  the go-sdk server with the test tools
//	hang    reads stdin and never answers
//	exit    writes to stderr and exits 2 at once
//	raw     a hand-written server listing odd tools, with junk on stdout
//	        ("raw notools": one that offers no tools)
//	stubborn  the go-sdk server that stays (ignoring SIGTERM) once its
//	        stdin closed
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/mcpclient/mcptest"
)

func main() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "":
		fmt.Fprintln(os.Stderr, "testserver: serving on stdio")
		if err := mcptest.Server(mcptest.Options{Crash: true}).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "testserver:", err)
			os.Exit(1)
		}
	case "stubborn":
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		_ = mcptest.Server(mcptest.Options{Crash: true}).Run(context.Background(), &mcp.StdioTransport{})
		fmt.Fprintln(os.Stderr, "testserver: stdin closed; staying")
		select {}
	case "hang":
		fmt.Fprintln(os.Stderr, "testserver: hanging")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
	case "exit":
		fmt.Fprintln(os.Stderr, "testserver: cannot start: no config")
		os.Exit(2)
	case "raw":
		raw()
	default:
		fmt.Fprintln(os.Stderr, "testserver: unknown mode", mode)
		os.Exit(2)
	}
}

// raw answers initialize and tools/list by hand, listing tools the go-sdk
// server side would refuse to add.
func raw() {
	fmt.Println("this line is not JSON-RPC")
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	obj := map[string]any{"type": "object"}
	long := strings.Repeat("x", 80)
	list := []map[string]any{
		{"name": "ok", "inputSchema": obj, "description": "fine"},
		{"name": "string_schema", "inputSchema": map[string]any{"type": "string"}},
		{"name": "array_schema", "inputSchema": []any{1, 2}},
		{"name": "no_type", "inputSchema": map[string]any{"properties": map[string]any{}}},
		{"name": "dotted.name/é", "inputSchema": obj},
		{"name": "dotted_name__", "inputSchema": obj},
		{"name": "dotted_name_é", "inputSchema": obj},
		{"name": long, "inputSchema": obj},
		{"name": long + "y", "inputSchema": obj},
	}
	caps := map[string]any{"tools": map[string]any{}}
	if len(os.Args) > 2 && os.Args[2] == "notools" {
		caps = map[string]any{"resources": map[string]any{}}
	}
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case "initialize":
			resp["result"] = map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    caps,
				"serverInfo":      map[string]any{"name": "raw", "version": "1"},
			}
		case "tools/list":
			resp["result"] = map[string]any{"tools": list}
		case "tools/call":
			resp["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "raw ok"}}}
		default:
			resp["error"] = map[string]any{"code": -32601, "message": "method not found"}
		}
		_ = out.Encode(resp)
	}
}
