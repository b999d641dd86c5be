package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sort"

	"github.com/ferry-dev/ferry/internal/tools"
)

// Config configures the decorators.
type Config struct {
	// Logger gets the warnings of registrations that failed and of flags
	// that were not what the schema says (nil: slog.Default()).
	Logger *slog.Logger
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// decisions says what Decorate does with each tool of tools.AllTools: nil
// keeps the tool as it is (it makes no files), a function wraps it. Every
// tool of tools.AllTools needs an entry (TestEveryToolHasADecision), so a
// tool added there cannot bypass artifacts unnoticed. (ferry has no browser
// screenshot tool; one would get a decorator here.)
var decisions = map[string]func(tools.Tool, Config) tools.Tool{
	"Read":  nil,
	"Glob":  nil,
	"Grep":  nil,
	"Write": WrapWrite,
	"Edit":  WrapEdit,
	"Bash":  WrapBash,
	// MultiEdit and NotebookEdit change a file as Edit does.
	"MultiEdit":    WrapEdit,
	"NotebookEdit": WrapEdit,
	// WebFetch and TodoWrite write no files.
	"WebFetch":  nil,
	"TodoWrite": nil,
}

// Decorated is implemented by the decorators.
type Decorated interface {
	tools.Tool
	// Unwrap returns the decorated tool.
	Unwrap() tools.Tool
}

// Decorate returns ts with Write, Edit and Bash replaced by their
// decorators (same names, so the model and the permission rules see the
// same tools). Tools already decorated and tools Decorate has no decision
// for are kept as they are.
func Decorate(ts []tools.Tool, cfg Config) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = t
		if _, done := t.(Decorated); done {
			continue
		}
		if wrap := decisions[t.Name()]; wrap != nil {
			out[i] = wrap(t, cfg)
		}
	}
	return out
}

// DecoratedNames lists the tools of tools.AllTools that Decorate wraps, in
// that list's order.
func DecoratedNames() []string {
	var names []string
	for _, t := range tools.AllTools() {
		if decisions[t.Name()] != nil {
			names = append(names, t.Name())
		}
	}
	return names
}

// DecisionNames lists every tool name Decorate has a decision for (wrap or
// keep), sorted: the lockstep check against tools.AllTools reads it.
func DecisionNames() []string {
	names := make([]string, 0, len(decisions))
	for n := range decisions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// guard runs a registration: a panic in it is logged, never passed on, so
// the tool's result stays what the delegate returned.
func guard(ctx context.Context, log *slog.Logger, tool string, register func()) {
	defer func() {
		if p := recover(); p != nil {
			log.Warn("artifact: registration panicked; the tool result is unchanged",
				"tool", tool, "tool_use_id", tools.ToolUseID(ctx), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	register()
}

// field is one member of a JSON object, in order.
type field struct {
	key string
	val json.RawMessage
}

// objectFields splits a JSON object into its members, in order; ok is
// false when raw is not exactly one JSON object.
func objectFields(raw []byte) ([]field, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, field{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return out, true
}

// encodeObject joins members into a JSON object.
func encodeObject(fs []field) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key) // a string always encodes
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// takeKey removes every member named key from the input object raw. It
// returns the value (the last one, as a decoder reads duplicates), whether
// it was there, and the input to pass on: raw itself when the key is absent
// or raw is not an object (the delegate then says what is wrong with it).
func takeKey(raw json.RawMessage, key string) (val json.RawMessage, found bool, rest json.RawMessage) {
	fs, ok := objectFields(raw)
	if !ok {
		return nil, false, raw
	}
	kept := fs[:0:0]
	for _, f := range fs {
		if f.key == key {
			val, found = f.val, true
			continue
		}
		kept = append(kept, f)
	}
	if !found {
		return nil, false, raw
	}
	return val, true, encodeObject(kept)
}

// withProperty returns schema with one more property, appended after the
// others.
func withProperty(schema json.RawMessage, name string, prop json.RawMessage) (json.RawMessage, error) {
	top, ok := objectFields(schema)
	if !ok {
		return nil, errors.New("the schema is not a JSON object")
	}
	for i, f := range top {
		if f.key != "properties" {
			continue
		}
		props, ok := objectFields(f.val)
		if !ok {
			return nil, errors.New("the schema's properties are not an object")
		}
		for _, p := range props {
			if p.key == name {
				return nil, fmt.Errorf("the schema already has a property %q", name)
			}
		}
		top[i].val = encodeObject(append(props, field{name, prop}))
		return encodeObject(top), nil
	}
	return nil, errors.New("the schema has no properties")
}

// schemaWith is withProperty for a decorator: if the delegate's schema
// cannot take the property, the delegate's schema is kept (the model then
// does not see the parameter; everything else still works) and the problem
// is logged.
func schemaWith(t tools.Tool, name string, prop json.RawMessage, log *slog.Logger) json.RawMessage {
	s, err := withProperty(t.InputSchema(), name, prop)
	if err != nil {
		log.Warn("artifact: cannot add the parameter to the tool's schema", "tool", t.Name(), "parameter", name, "err", err)
		return t.InputSchema()
	}
	return s
}
