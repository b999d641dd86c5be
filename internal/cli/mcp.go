package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/mcpserver"
	"github.com/ferry-dev/ferry/internal/redact"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/version"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runMCP(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry mcp", flag.ContinueOnError)
	workspace := fs.String("workspace", ".", "the workspace `DIR` the tools are confined to")
	var allow stringList
	fs.Var(&allow, "allow", "an extra `DIR` the tools may reach (repeatable)")
	maxTokens := fs.Int("max-read-tokens", tools.DefaultLimits().MaxReadTokens, "Read's token gate")
	historyDir := fs.String("history", "", "keep what Write and Edit replace in `DIR` (default $XDG_STATE_HOME/ferry/history)")
	noHistory := fs.Bool("no-history", false, "keep no file history")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry mcp [--workspace DIR] [--allow DIR]...",
		"\nServes ferry's file tools (Read, Write, Edit, Glob, Grep) to an MCP client over",
		"standard input and output, with the read-before-write contract per connection.",
		"Example client config: {\"command\": \"ferry\", \"args\": [\"mcp\", \"--workspace\", \"/path/to/project\"]}",
	); !ok {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("ferry mcp: unexpected argument %q", fs.Arg(0))
	}
	if *maxTokens < 1 {
		return usageErrorf("ferry mcp: --max-read-tokens must be at least 1")
	}
	local, err := vfs.NewLocal(*workspace, allow...)
	if err != nil {
		return fmt.Errorf("ferry mcp: %w", err)
	}
	defer func() { _ = local.Close() }()
	var history tools.FileHistory
	if !*noHistory {
		dir := *historyDir
		if dir == "" {
			if dir, err = filehistory.DefaultDir(); err != nil {
				return fmt.Errorf("ferry mcp: %w (or pass --no-history)", err)
			}
		}
		store, err := filehistory.Open(dir, 0)
		if err != nil {
			return fmt.Errorf("ferry mcp: %w (or pass --no-history)", err)
		}
		history = store
	}
	limits := tools.DefaultLimits()
	limits.MaxReadTokens = *maxTokens
	// Logs go to stderr: stdout carries the protocol.
	log := slog.New(redact.NewHandler(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	server := mcpserver.New(version.String(), tools.FileTools(), func() *tools.Env {
		return &tools.Env{FS: local, State: tools.NewReadState(), Limits: limits, History: history}
	}, log)
	if err := server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("ferry mcp: %w", err)
	}
	return nil
}

// nopWriteCloser keeps the transport from closing the writer it was given.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
