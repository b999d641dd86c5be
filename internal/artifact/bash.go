package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/ferry-dev/ferry/internal/runecut"

	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// PathsParam is the input key of Bash that declares the files a command
// makes for the user.
const PathsParam = "artifact_paths"

// MaxDeclaredPaths bounds artifact_paths; more are ignored with a warning.
const MaxDeclaredPaths = 100

var pathsSchema = json.RawMessage(`{"type":"array","items":{"type":"string","minLength":1},"maxItems":100,"description":"Files (relative to the workspace) this command creates or overwrites that are meant for the user: a report, an export, a chart. Each one the command creates or changes is handed to the user to download. Leave out scratch and intermediate files."}`)

// bashTool decorates Bash.
type bashTool struct {
	delegate tools.Tool
	schema   json.RawMessage
	log      *slog.Logger
}

var _ Decorated = (*bashTool)(nil)

// WrapBash decorates t (Bash) with artifact_paths.
func WrapBash(t tools.Tool, cfg Config) tools.Tool {
	log := cfg.logger()
	return &bashTool{delegate: t, schema: schemaWith(t, PathsParam, pathsSchema, log), log: log}
}

// Name implements tools.Tool: the delegate's.
func (d *bashTool) Name() string { return d.delegate.Name() }

// Description implements tools.Tool: the delegate's.
func (d *bashTool) Description() string { return d.delegate.Description() }

// InputSchema implements tools.Tool: the delegate's plus artifact_paths.
func (d *bashTool) InputSchema() json.RawMessage { return d.schema }

// ReadOnly implements tools.Tool: the delegate's.
func (d *bashTool) ReadOnly() bool { return d.delegate.ReadOnly() }

// Unwrap implements Decorated.
func (d *bashTool) Unwrap() tools.Tool { return d.delegate }

// declared is one declared path and what it was before the command ran.
type declared struct {
	name    string
	before  vfs.Stamp
	existed bool
}

// Run implements tools.Tool: note the declared files, run the command,
// register those it created or changed.
func (d *bashTool) Run(ctx context.Context, env *tools.Env, input json.RawMessage) (*tools.Result, error) {
	raw, found, forward := takeKey(input, PathsParam)
	col := CollectorFrom(ctx)
	var decl []declared
	if found && col != nil && env != nil && env.FS != nil {
		guard(ctx, d.log, d.Name(), func() { decl = d.before(ctx, env.FS, raw) })
	}
	res, err := d.delegate.Run(ctx, env, forward)
	if err != nil || res == nil || len(decl) == 0 {
		return res, err
	}
	guard(ctx, d.log, d.Name(), func() { d.after(ctx, env.FS, col, decl) })
	return res, nil
}

// before reads the declared paths and stats each one. Declarations that
// cannot be artifacts are dropped with a warning.
func (d *bashTool) before(ctx context.Context, fsys vfs.FS, raw json.RawMessage) []declared {
	warn := func(msg string, args ...any) {
		d.log.Warn("artifact: "+msg, append([]any{"tool", d.Name(), "tool_use_id", tools.ToolUseID(ctx)}, args...)...)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		warn("artifact_paths is not an array of paths; ignored", "value", runecut.Ellipsis(string(raw), 64))
		return nil
	}
	if len(items) > MaxDeclaredPaths {
		warn("artifact_paths has too many paths; the rest are ignored", "count", len(items), "max", MaxDeclaredPaths)
		items = items[:MaxDeclaredPaths]
	}
	var out []declared
	for _, it := range items {
		var name string
		if err := json.Unmarshal(it, &name); err != nil || name == "" {
			warn("an artifact_paths entry is not a path; ignored", "value", runecut.Ellipsis(string(it), 64))
			continue
		}
		info, err := fsys.Stat(name)
		switch {
		case errors.Is(err, vfs.ErrNotExist):
			// Made by the command, we hope; still confined: it must
			// resolve inside the workspace.
			p, rerr := fsys.Resolve(name)
			if rerr == nil {
				_, rerr = workspaceRel(fsys, p)
			}
			if rerr != nil {
				warn("a declared artifact path is outside the workspace; ignored", "path", runecut.Ellipsis(name, 256), "err", rerr)
				continue
			}
			out = append(out, declared{name: name})
		case err != nil:
			warn("a declared artifact path cannot be used; ignored", "path", runecut.Ellipsis(name, 256), "err", err)
		default:
			if _, rerr := workspaceRel(fsys, info.Path); rerr != nil {
				warn("a declared artifact path is outside the workspace; ignored", "path", runecut.Ellipsis(name, 256))
				continue
			}
			out = append(out, declared{name: name, before: info.Stamp, existed: true})
		}
	}
	return out
}

// after registers each declared path the command created or changed.
func (d *bashTool) after(ctx context.Context, fsys vfs.FS, col *Collector, decl []declared) {
	id := tools.ToolUseID(ctx)
	warn := func(msg string, args ...any) {
		d.log.Warn("artifact: "+msg, append([]any{"tool", d.Name(), "tool_use_id", id}, args...)...)
	}
	seen := map[string]bool{}
	for _, dc := range decl {
		info, err := fsys.Stat(dc.name)
		if err != nil {
			warn("a declared artifact path is not there after the command; ignored", "path", runecut.Ellipsis(dc.name, 256), "err", err)
			continue
		}
		if info.IsDir {
			warn("a declared artifact path is a directory, not a file; ignored", "path", runecut.Ellipsis(dc.name, 256))
			continue
		}
		rel, err := workspaceRel(fsys, info.Path)
		if err != nil {
			warn("a declared artifact path is outside the workspace; ignored", "path", runecut.Ellipsis(dc.name, 256))
			continue
		}
		if info.Links > 1 {
			warn("a declared artifact path has other hard links (names that may lie outside the workspace); not registered", "path", rel, "links", info.Links)
			continue
		}
		if dc.existed && info.Stamp == dc.before {
			warn("the command did not create or change a declared artifact path; not registered", "path", rel)
			continue
		}
		if seen[info.Path] {
			continue
		}
		seen[info.Path] = true
		m, err := lookup(fsys, info.Path)
		if err != nil {
			warn("cannot read the file's type; registered without it", "path", rel, "err", err)
			m = meta{size: info.Stamp.Size}
		}
		f, err := New(rel, m.size, WithMimeType(m.mime), WithToolUseID(id))
		if err != nil {
			warn("not registered", "path", rel, "err", err)
			continue
		}
		col.Add(f)
	}
}
