package mcpclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/tools"
)

// Bounds of what a server's tool list may put into the model's context.
const (
	// maxName is the longest tool name model APIs accept.
	maxName = 64
	// maxDescription cuts a longer tool description.
	maxDescription = 8 << 10
	// maxSchema leaves out a tool whose input schema is larger.
	maxSchema = 64 << 10
	// maxErrorText cuts a server's error text quoted to the model.
	maxErrorText = 4 << 10
)

var _ tools.Tool = (*mcpTool)(nil)

// mcpTool is one server tool as a tools.Tool.
type mcpTool struct {
	set      *Set
	srv      *server
	name     string // mcp__NAME__TOOL, set by nameTools
	remote   string // the server's own name of it
	desc     string
	schema   json.RawMessage
	readOnly bool
}

func (t *mcpTool) Name() string                 { return t.name }
func (t *mcpTool) Description() string          { return t.desc }
func (t *mcpTool) InputSchema() json.RawMessage { return t.schema }
func (t *mcpTool) ReadOnly() bool               { return t.readOnly }

// makeTools turns a server's tool list into tools, leaving out (with a
// note) the ones whose schema is not an object schema and duplicates.
func makeTools(s *Set, srv *server, list []*mcp.Tool) ([]*mcpTool, []string) {
	slices.SortStableFunc(list, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	var out []*mcpTool
	var notes []string
	for i, mt := range list {
		if mt == nil {
			continue
		}
		if i > 0 && list[i-1] != nil && list[i-1].Name == mt.Name {
			notes = append(notes, fmt.Sprintf("tool %q is listed twice; the first is used", mt.Name))
			continue
		}
		schema, err := objectSchema(mt.InputSchema)
		if err != nil {
			notes = append(notes, fmt.Sprintf("tool %q left out: %v", mt.Name, err))
			continue
		}
		desc := mt.Description
		if desc == "" {
			desc = mt.Title
		}
		if len(desc) > maxDescription {
			desc = runecut.Prefix(desc, maxDescription) + "… (description cut)"
		}
		ro := mt.Annotations != nil && mt.Annotations.ReadOnlyHint
		out = append(out, &mcpTool{set: s, srv: srv, remote: mt.Name, desc: desc, schema: schema, readOnly: ro})
	}
	return out, notes
}

// objectSchema checks that v (a server's inputSchema) is a JSON object
// schema of a sane size and returns it as JSON.
func objectSchema(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("its inputSchema cannot be encoded: %w", err)
	}
	if len(raw) > maxSchema {
		return nil, fmt.Errorf("its inputSchema is %d KB, over %d KB", len(raw)>>10, maxSchema>>10)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("its inputSchema is not a JSON object")
	}
	var typ string
	if err := json.Unmarshal(m["type"], &typ); err != nil || typ != "object" {
		return nil, errors.New(`its inputSchema is not an object schema (type "object")`)
	}
	return raw, nil
}

// nameTools names every connected server's tools and returns them all
// (copies, named; srv.mu of each is taken):
// servers in order, each one's tools by their own name, so that the same
// configuration always gives the same names.
func nameTools(servers []*server) []tools.Tool {
	used := map[string]bool{}
	var out []tools.Tool
	for _, srv := range servers {
		srv.mu.Lock()
		for _, t := range srv.tools {
			c := *t // a tool handed out keeps its name
			c.name = toolName(srv.cfg.Name, t.remote, used)
			used[c.name] = true
			out = append(out, &c)
		}
		srv.mu.Unlock()
	}
	return out
}

// toolName is mcp__SERVER__TOOL reduced to [A-Za-z0-9_-], with a hashed
// suffix when it is too long or already used.
func toolName(server, tool string, used map[string]bool) string {
	base := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(base) <= maxName && !used[base] {
		return base
	}
	for i := 1; ; i++ {
		key := server + "\x00" + tool
		if i > 1 {
			key += "\x00" + strconv.Itoa(i)
		}
		sum := sha256.Sum256([]byte(key))
		suffix := "_" + hex.EncodeToString(sum[:4])
		name := base[:min(len(base), maxName-len(suffix))] + suffix
		if !used[name] {
			return name
		}
	}
}

// sanitize replaces every byte outside [A-Za-z0-9_-] with "_".
func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		ok := c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if ok {
			out = append(out, c)
			i++
			continue
		}
		out = append(out, '_')
		// One "_" for a whole multi-byte rune.
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return string(out)
}

// Run calls the tool on its server.
func (t *mcpTool) Run(ctx context.Context, env *tools.Env, input json.RawMessage) (*tools.Result, error) {
	args, err := arguments(input)
	if err != nil {
		return nil, err
	}
	cs, err := t.session()
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, t.set.opts.CallTimeout)
	defer cancel()
	stop := context.AfterFunc(t.set.ctx, cancel) // Close ends calls in flight
	defer stop()
	res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		return nil, t.callError(ctx, callCtx, err)
	}
	return convert(ctx, env, t.srv.cfg.Name, t.remote, res)
}

// arguments checks that input is a JSON object (or nothing) and returns it
// for the call.
func arguments(input json.RawMessage) (json.RawMessage, error) {
	in := bytes.TrimSpace(input)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(in, &m); err != nil {
		return nil, tools.Errorf(tools.CodeInvalidInput, "The input must be a JSON object of the tool's parameters.")
	}
	return json.RawMessage(in), nil
}

// session returns the server's session, or the error its tools answer
// once it is gone.
func (t *mcpTool) session() (*mcp.ClientSession, error) {
	t.srv.mu.Lock()
	defer t.srv.mu.Unlock()
	if t.srv.down != "" {
		return nil, t.downError(t.srv.down)
	}
	return t.srv.session, nil
}

func (t *mcpTool) downError(why string) *tools.Error {
	return tools.Errorf(tools.CodeMCP, "MCP server %s %s. Its tools cannot be used in this session; do not retry them.", t.srv.cfg.Name, runecut.Ellipsis(why, maxErrorText))
}

// callError words a failed call for the model.
func (t *mcpTool) callError(ctx, callCtx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // the turn was cancelled: not the model's business
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return &tools.Error{Code: tools.CodeTimeout, Err: err, Message: fmt.Sprintf(
			"MCP tool %s on server %s did not answer within %s; the call was cancelled.", t.remote, t.srv.cfg.Name, t.set.opts.CallTimeout)}
	}
	if t.set.ctx.Err() != nil {
		return t.downError("was closed with the session")
	}
	// A server that died answers the call with a closed connection before
	// its watcher has said why: wait for that.
	t.srv.mu.Lock()
	sc := t.srv.stdio
	t.srv.mu.Unlock()
	if sc != nil {
		if why, ok := sc.ended(endWait); ok {
			e := t.downError(t.srv.markDown(why))
			e.Err = err
			return e
		}
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return &tools.Error{Code: tools.CodeMCP, Err: err, Message: fmt.Sprintf(
			"MCP server %s refused the call of %s (JSON-RPC error %d): %s", t.srv.cfg.Name, t.remote, werr.Code, runecut.Ellipsis(werr.Message, maxErrorText))}
	}
	return &tools.Error{Code: tools.CodeMCP, Err: err, Message: fmt.Sprintf(
		"Calling MCP tool %s on server %s failed: %s", t.remote, t.srv.cfg.Name, runecut.Ellipsis(err.Error(), maxErrorText))}
}
