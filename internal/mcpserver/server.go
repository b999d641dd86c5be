// Package mcpserver serves ferry's file tools to any MCP client (Claude
// Desktop, Cursor, Codex, …) through the official MCP Go SDK. Every tool keeps
// its full contract; each MCP session gets its own tools.Env, so the
// read-before-write state is per connection, never shared between clients.
package mcpserver

import (
	"context"
	"encoding/base64"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// NewEnv makes the Env of one MCP session.
type NewEnv func() *tools.Env

// New returns an MCP server offering toolset. Call Run on it with a
// transport (mcp.StdioTransport for `ferry mcp`).
func New(version string, toolset []tools.Tool, newEnv NewEnv, log *slog.Logger) *mcp.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "ferry", Title: "ferry file tools", Version: version}, nil)
	envs := &sessionEnvs{newEnv: newEnv, m: map[*mcp.ServerSession]*tools.Env{}}
	for _, t := range toolset {
		s.AddTool(describe(t), handler(t, envs, log))
	}
	return s
}

type sessionEnvs struct {
	newEnv NewEnv
	mu     sync.Mutex
	m      map[*mcp.ServerSession]*tools.Env
}

func (e *sessionEnvs) get(s *mcp.ServerSession) *tools.Env {
	e.mu.Lock()
	defer e.mu.Unlock()
	env, ok := e.m[s]
	if !ok {
		env = e.newEnv()
		e.m[s] = env
		// Forget the session's state when it ends, so a long-lived server
		// does not accumulate the read state of every client it ever had.
		go func() {
			_ = s.Wait()
			e.mu.Lock()
			delete(e.m, s)
			e.mu.Unlock()
		}()
	}
	return env
}

func describe(t tools.Tool) *mcp.Tool {
	readOnly := t.ReadOnly()
	destructive := !readOnly
	closed := false
	return &mcp.Tool{
		Name:        t.Name(),
		Description: t.Description(),
		InputSchema: t.InputSchema(),
		Annotations: &mcp.ToolAnnotations{
			Title:           t.Name(),
			ReadOnlyHint:    readOnly,
			DestructiveHint: &destructive,
			OpenWorldHint:   &closed,
		},
	}
}

func handler(t tools.Tool, envs *sessionEnvs, log *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env := envs.get(req.Session)
		// MCP calls carry no tool-use id; each gets a fresh one, so anything
		// keyed by it (artifacts) still works.
		res, err := tools.Invoke(ctx, env, t, protocol.NewID(), req.Params.Arguments)
		if err != nil {
			if tools.CodeOf(err) == tools.CodeInternal {
				log.Error("tool failed", "tool", t.Name(), "err", err)
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: tools.AgentMessage(err)}}}, nil
		}
		return &mcp.CallToolResult{Content: content(res)}, nil
	}
}

// content converts a tool result's blocks to MCP content.
func content(res *tools.Result) []mcp.Content {
	out := make([]mcp.Content, 0, len(res.Blocks))
	for _, b := range res.Blocks {
		switch b.Type {
		case "image":
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				out = append(out, &mcp.TextContent{Text: "(an image that could not be encoded)"})
				continue
			}
			out = append(out, &mcp.ImageContent{Data: data, MIMEType: b.MediaType})
		case "document":
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				out = append(out, &mcp.TextContent{Text: "(a document that could not be encoded)"})
				continue
			}
			uri := "file://" + res.Path
			out = append(out, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: b.MediaType, Blob: data}})
		default:
			out = append(out, &mcp.TextContent{Text: b.Text})
		}
	}
	if len(out) == 0 {
		out = append(out, &mcp.TextContent{Text: "(no output)"})
	}
	return out
}
