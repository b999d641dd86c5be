// Package mcptest is an MCP server with tools that exercise a client: text,
// errors, images, huge output, structured output, resources, a call that
// blocks until cancelled, a crash. mcpclient's tests serve it over stdio
// (testdata/testserver) and streamable HTTP; other packages' tests may use
// it as a real server for ferry's agent.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options of Server.
type Options struct {
	// Crash adds the crash tool, which exits the process: only for a
	// server in a process of its own.
	Crash bool
}

// Server returns the test server.
func Server(o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	add := func(name, desc string, props string, readOnly bool, h func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)) {
		schema := json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
		t := &mcp.Tool{Name: name, Description: desc, InputSchema: schema}
		if readOnly {
			t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := map[string]any{}
			if len(req.Params.Arguments) > 0 {
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return nil, err
				}
			}
			return h(ctx, args)
		})
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	add("echo", "Echoes its text.", `"text":{"type":"string"}`, true, func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		return text(fmt.Sprintf("echo: %v", a["text"])), nil
	})
	add("fail", "Always reports an error.", ``, false, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		r := text("it broke on purpose")
		r.IsError = true
		return r, nil
	})
	add("image", "Returns a PNG of w×h px.", `"w":{"type":"integer"},"h":{"type":"integer"}`, true, func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		w, h := intArg(a, "w", 4), intArg(a, "h", 3)
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a picture"},
			&mcp.ImageContent{Data: PNG(w, h), MIMEType: "image/png"},
		}}, nil
	})
	add("huge", "Returns that many bytes of text.", `"bytes":{"type":"integer"}`, true, func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		return text(Huge(intArg(a, "bytes", 1<<20))), nil
	})
	add("sleep", "Blocks until cancelled, then writes marker.", `"marker":{"type":"string"}`, true, func(ctx context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		if m, _ := a["marker"].(string); m != "" {
			_ = os.WriteFile(m, []byte("cancelled"), 0o600)
		}
		return nil, ctx.Err()
	})
	add("structured", "Returns structured content only.", ``, true, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"answer": 42}}, nil
	})
	add("resources", "Returns a resource link and embedded resources.", ``, true, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		size := int64(12)
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ResourceLink{URI: "file:///srv/x.txt", Name: "x.txt", MIMEType: "text/plain", Size: &size},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://note", MIMEType: "text/plain", Text: "note body"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://blob", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://pic", MIMEType: "image/png", Blob: PNG(2, 2)}},
		}}, nil
	})
	add("env", "Returns an environment variable and the folder.", `"name":{"type":"string"}`, true, func(_ context.Context, a map[string]any) (*mcp.CallToolResult, error) {
		name, _ := a["name"].(string)
		wd, _ := os.Getwd()
		return text(fmt.Sprintf("%s=%s\ncwd=%s", name, os.Getenv(name), wd)), nil
	})
	add("grow", "Adds the tool grown (the server tells its clients the list changed).", ``, false, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		add("grown", "Added by grow.", ``, true, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			return text("grown ok"), nil
		})
		return text("grew"), nil
	})
	if o.Crash {
		add("crash", "Exits the server.", ``, false, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "testserver: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
		add("spawn", "Starts a long sleep below the server and returns its pid.", ``, false, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			return text(fmt.Sprint(cmd.Process.Pid)), nil
		})
	}
	return s
}

func intArg(a map[string]any, k string, def int) int {
	if v, ok := a[k].(float64); ok && v > 0 {
		return int(v)
	}
	return def
}

// PNG encodes a w×h image.
func PNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// Huge is n bytes of numbered lines.
func Huge(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %07d %s\n", i, strings.Repeat("abcdefgh ", 8))
	}
	return b.String()[:n]
}
