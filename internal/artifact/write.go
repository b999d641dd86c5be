package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/tools"
)

// FlagParam is the input key of Write and Edit that says whether the file
// is handed to the user.
const FlagParam = "artifact"

var flagSchema = json.RawMessage(`{"type":"boolean","default":true,"description":"Hand this file to the user as a deliverable they can open and download (default true). Set false for scratch files, temporary scripts and intermediate output."}`)

// fileTool decorates Write or Edit.
type fileTool struct {
	delegate tools.Tool
	schema   json.RawMessage
	log      *slog.Logger
	// fallback is the size and type to register when the file cannot be
	// looked up after the call: Write knows its content, Edit does not.
	fallback func(input json.RawMessage, path string) meta
}

var _ Decorated = (*fileTool)(nil)

// WrapWrite decorates t (Write) with the artifact parameter; a file it
// wrote is registered with, when the lookup fails, the UTF-8 byte length
// of the content as its size.
func WrapWrite(t tools.Tool, cfg Config) tools.Tool {
	return newFileTool(t, cfg, writeFallback)
}

// WrapEdit decorates t (Edit) with the artifact parameter; a file it
// changed is registered with size 0 when the lookup fails (spec §5: the
// size cannot be known without the file).
func WrapEdit(t tools.Tool, cfg Config) tools.Tool {
	return newFileTool(t, cfg, func(json.RawMessage, string) meta { return meta{} })
}

func newFileTool(t tools.Tool, cfg Config, fallback func(json.RawMessage, string) meta) *fileTool {
	log := cfg.logger()
	return &fileTool{delegate: t, schema: schemaWith(t, FlagParam, flagSchema, log), log: log, fallback: fallback}
}

// writeFallback is Write's size (and type) from its content.
func writeFallback(input json.RawMessage, p string) meta {
	var in struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(input, &in) != nil {
		return meta{}
	}
	return meta{size: int64(len(in.Content)), mime: sniffBytes([]byte(in.Content), p)}
}

// Name implements tools.Tool: the delegate's.
func (d *fileTool) Name() string { return d.delegate.Name() }

// Description implements tools.Tool: the delegate's (the parameter
// describes itself in the schema).
func (d *fileTool) Description() string { return d.delegate.Description() }

// InputSchema implements tools.Tool: the delegate's plus `artifact`.
func (d *fileTool) InputSchema() json.RawMessage { return d.schema }

// ReadOnly implements tools.Tool: the delegate's.
func (d *fileTool) ReadOnly() bool { return d.delegate.ReadOnly() }

// Unwrap implements Decorated.
func (d *fileTool) Unwrap() tools.Tool { return d.delegate }

// Run implements tools.Tool: read the flag, run the delegate, register.
func (d *fileTool) Run(ctx context.Context, env *tools.Env, input json.RawMessage) (*tools.Result, error) {
	raw, found, forward := takeKey(input, FlagParam)
	want := d.flag(ctx, raw, found)
	res, err := d.delegate.Run(ctx, env, forward)
	if err != nil || !want || res == nil {
		return res, err
	}
	if col := CollectorFrom(ctx); col != nil {
		guard(ctx, d.log, d.Name(), func() { d.register(ctx, env, col, res, forward) })
	}
	return res, nil
}

// flag reads `artifact` defensively: absent is true; a value that is not
// a boolean is logged and counts as true, since failing a good write over
// it would break the tool's contract.
func (d *fileTool) flag(ctx context.Context, raw json.RawMessage, found bool) bool {
	if !found {
		return true
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil || string(raw) == "null" {
		d.log.Warn("artifact: the artifact parameter is not a boolean; counting it as true",
			"tool", d.Name(), "tool_use_id", tools.ToolUseID(ctx), "value", runecut.Ellipsis(string(raw), 64))
		return true
	}
	return b
}

// register adds the file the call wrote to col.
func (d *fileTool) register(ctx context.Context, env *tools.Env, col *Collector, res *tools.Result, input json.RawMessage) {
	if env == nil || env.FS == nil {
		return
	}
	p := res.Path
	if p == "" {
		var in struct {
			FilePath string `json:"file_path"`
		}
		_ = json.Unmarshal(input, &in)
		resolved, err := env.FS.Resolve(in.FilePath)
		if err != nil {
			d.log.Warn("artifact: cannot tell which file the call wrote; not registered", "tool", d.Name(), "tool_use_id", tools.ToolUseID(ctx), "err", err)
			return
		}
		p = resolved
	}
	rel, err := workspaceRel(env.FS, p)
	if err != nil {
		d.log.Warn("artifact: not registered", "tool", d.Name(), "tool_use_id", tools.ToolUseID(ctx), "path", p, "err", err)
		return
	}
	m, err := lookup(env.FS, p)
	if errors.Is(err, errHardLinked) {
		d.log.Warn("artifact: not registered", "tool", d.Name(), "tool_use_id", tools.ToolUseID(ctx), "path", rel, "err", err)
		return
	}
	if err != nil {
		d.log.Warn("artifact: cannot read the file's size and type; using the fallback", "tool", d.Name(), "tool_use_id", tools.ToolUseID(ctx), "path", rel, "err", err)
		m = d.fallback(input, p)
	}
	f, err := New(rel, m.size, WithMimeType(m.mime), WithToolUseID(tools.ToolUseID(ctx)))
	if err != nil {
		d.log.Warn("artifact: not registered", "tool", d.Name(), "tool_use_id", tools.ToolUseID(ctx), "path", rel, "err", err)
		return
	}
	col.Add(f)
}
