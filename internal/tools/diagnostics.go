package tools

import (
	"context"
	"log/slog"
)

// addDiagnostics appends what Env.Diagnostics says of the file a call
// changed to its result, so the model sees the errors its edit made in
// the same turn. A failure to ask is not the call's failure: the change
// is made and its result stands without them.
func addDiagnostics(ctx context.Context, env *Env, res *Result) {
	if env == nil || env.Diagnostics == nil || !res.Changed || res.Path == "" {
		return
	}
	text, err := env.Diagnostics(ctx, res.Path)
	if err != nil {
		slog.Debug("no diagnostics after the change", "path", res.Path, "err", err)
		return
	}
	if text != "" {
		res.Blocks = append(res.Blocks, Block{Type: "text", Text: text})
	}
}
