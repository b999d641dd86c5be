package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
)

// Invoke is the one place tool calls run through, for every caller (the
// agent runtime, the MCP server): it puts the tool-use id into the context,
// turns a panic into an internal error instead of a dead process, and makes
// sure a failure is always an error, never a half result.
func Invoke(ctx context.Context, env *Env, t Tool, toolUseID string, input json.RawMessage) (res *Result, err error) {
	ctx = WithToolUseID(ctx, toolUseID)
	defer func() {
		if p := recover(); p != nil {
			res = nil
			err = fmt.Errorf("tool %s panicked: %v\n%s", t.Name(), p, debug.Stack())
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err = t.Run(ctx, env, input)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &Result{}
	}
	addDiagnostics(ctx, env, res)
	return res, nil
}
