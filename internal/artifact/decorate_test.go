package artifact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// logBuf is a log sink tests read warnings from.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fixture is a workspace, an Env on it, and decorator config logging to a
// buffer.
type fixture struct {
	dir string
	env *tools.Env
	cfg artifact.Config
	log *logBuf
}

func newFixture(t *testing.T, extra ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	fsys, err := vfs.NewLocal(dir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fsys.Close() })
	lb := &logBuf{}
	return &fixture{
		dir: fsys.Roots()[0],
		env: &tools.Env{FS: fsys, State: tools.NewReadState(), Limits: tools.DefaultLimits()},
		cfg: artifact.Config{Logger: slog.New(slog.NewTextHandler(lb, nil))},
		log: lb,
	}
}

func (fx *fixture) file(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(fx.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// read records a full Read of name, as the Read tool would.
func (fx *fixture) read(t *testing.T, name string) {
	t.Helper()
	if _, err := tools.Invoke(context.Background(), fx.env, tools.Read{}, "r", mustJSON(t, map[string]any{"file_path": name})); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call runs tool through tools.Invoke (the one invocation point) with a
// collector in the context, as the agent does.
func call(t *testing.T, env *tools.Env, tool tools.Tool, id string, in any) (*tools.Result, []artifact.File, error) {
	t.Helper()
	c := artifact.NewCollector()
	ctx := artifact.WithCollector(context.Background(), c)
	raw, ok := in.(json.RawMessage)
	if !ok {
		raw = mustJSON(t, in)
	}
	res, err := tools.Invoke(ctx, env, tool, id, raw)
	return res, c.Artifacts(), err
}

func TestWriteRegistersByDefault(t *testing.T) {
	fx := newFixture(t)
	w := artifact.WrapWrite(tools.Write{}, fx.cfg)
	content := "region,sales\nnorth,10\nsouth,20\n"
	res, got, err := call(t, fx.env, w, "toolu_w1", map[string]any{"file_path": "reports/sales.csv", "content": content})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || len(got) != 1 {
		t.Fatalf("result %+v, artifacts %+v", res, got)
	}
	a := got[0]
	if a.Path() != "reports/sales.csv" || a.FileName() != "sales.csv" || a.Size() != int64(len(content)) ||
		a.MimeType() != "text/csv" || a.ToolUseID() != "toolu_w1" || a.DownloadToken() != "" {
		t.Fatalf("artifact %+v", a.ToMessage().Fields())
	}
	if fx.log.String() != "" {
		t.Fatalf("unexpected warnings: %s", fx.log)
	}
}

func TestArtifactFlagValues(t *testing.T) {
	cases := []struct {
		name     string
		flag     string // raw JSON; "" leaves the key out
		register bool
		warn     bool
	}{
		{"absent", "", true, false},
		{"true", `true`, true, false},
		{"false", `false`, false, false},
		{"string true", `"true"`, true, true},
		{"string false", `"false"`, true, true},
		{"number", `1`, true, true},
		{"zero", `0`, true, true},
		{"null", `null`, true, true},
		{"object", `{"x":false}`, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := newFixture(t)
			w := artifact.WrapWrite(tools.Write{}, fx.cfg)
			in := `{"file_path":"out.txt","content":"hello\n"`
			if c.flag != "" {
				in += `,"artifact":` + c.flag
			}
			in += "}"
			res, got, err := call(t, fx.env, w, "t", json.RawMessage(in))
			if err != nil {
				t.Fatalf("the write failed over the flag: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(fx.dir, "out.txt")); string(b) != "hello\n" || !res.Changed {
				t.Fatalf("file %q", b)
			}
			if (len(got) == 1) != c.register || len(got) > 1 {
				t.Fatalf("registered %d, want %v", len(got), c.register)
			}
			warned := strings.Contains(fx.log.String(), "not a boolean")
			if warned != c.warn {
				t.Fatalf("warned %v, want %v: %s", warned, c.warn, fx.log)
			}
		})
	}
}

// recordingTool is a delegate that keeps the input it got.
type recordingTool struct {
	tools.Tool
	mu   sync.Mutex
	seen []json.RawMessage
}

func (r *recordingTool) Run(ctx context.Context, env *tools.Env, in json.RawMessage) (*tools.Result, error) {
	r.mu.Lock()
	r.seen = append(r.seen, append(json.RawMessage(nil), in...))
	r.mu.Unlock()
	return r.Tool.Run(ctx, env, in)
}

func TestFlagIsRemovedBeforeTheDelegate(t *testing.T) {
	fx := newFixture(t)
	rec := &recordingTool{Tool: tools.Write{}}
	w := artifact.WrapWrite(rec, fx.cfg)
	if _, _, err := call(t, fx.env, w, "t", json.RawMessage(`{"file_path":"a.txt","artifact":false,"content":"x"}`)); err != nil {
		t.Fatal(err)
	}
	// The members keep their order and values; only artifact is gone.
	if got := string(rec.seen[0]); got != `{"file_path":"a.txt","content":"x"}` {
		t.Fatalf("delegate got %s", got)
	}
	// Without the key the input is passed on byte for byte.
	raw := `{ "file_path" : "b.txt", "content": "y" }`
	if _, _, err := call(t, fx.env, w, "t", json.RawMessage(raw)); err != nil {
		t.Fatal(err)
	}
	if got := string(rec.seen[1]); got != raw {
		t.Fatalf("delegate got %s", got)
	}
	// Other unknown keys still reach the delegate, which refuses them.
	_, got, err := call(t, fx.env, w, "t", json.RawMessage(`{"file_path":"c.txt","content":"z","mode":"x"}`))
	if tools.CodeOf(err) != tools.CodeInvalidInput || len(got) != 0 {
		t.Fatalf("err %v, artifacts %d", err, len(got))
	}
}

func TestFailedDelegateRegistersNothingAndKeepsItsError(t *testing.T) {
	cases := []struct {
		name string
		tool tools.Tool
		wrap func(tools.Tool, artifact.Config) tools.Tool
		in   map[string]any
	}{
		{"write unread file", tools.Write{}, artifact.WrapWrite, map[string]any{"file_path": "exists.txt", "content": "new", "artifact": true}},
		{"write outside", tools.Write{}, artifact.WrapWrite, map[string]any{"file_path": "../escape.txt", "content": "x"}},
		{"edit no match", tools.Edit{}, artifact.WrapEdit, map[string]any{"file_path": "exists.txt", "old_string": "absent", "new_string": "y"}},
		{"edit missing file", tools.Edit{}, artifact.WrapEdit, map[string]any{"file_path": "nope.txt", "old_string": "a", "new_string": "b"}},
		{"bad input", tools.Write{}, artifact.WrapWrite, map[string]any{"file_path": 7, "content": "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The same call on two identical workspaces: plain and decorated.
			plain, deco := newFixture(t), newFixture(t)
			for _, fx := range []*fixture{plain, deco} {
				fx.file(t, "exists.txt", "old content\n")
				if strings.HasPrefix(c.name, "edit") {
					fx.read(t, "exists.txt")
				}
			}
			in := map[string]any{}
			for k, v := range c.in {
				if k != "artifact" {
					in[k] = v
				}
			}
			_, _, perr := call(t, plain.env, c.tool, "t", in)
			_, got, derr := call(t, deco.env, c.wrap(c.tool, deco.cfg), "t", c.in)
			if perr == nil || derr == nil {
				t.Fatalf("expected failures: %v / %v", perr, derr)
			}
			pm := strings.ReplaceAll(tools.AgentMessage(perr), plain.dir, "WS")
			dm := strings.ReplaceAll(tools.AgentMessage(derr), deco.dir, "WS")
			if tools.CodeOf(perr) != tools.CodeOf(derr) || pm != dm {
				t.Fatalf("the decorator changed the error:\n%s\n%s", pm, dm)
			}
			if len(got) != 0 {
				t.Fatalf("registered %+v after a failure", got)
			}
		})
	}
}

func TestEditRegisters(t *testing.T) {
	fx := newFixture(t)
	fx.file(t, "docs/report.md", "# Report\n\nTotal: TBD\n")
	fx.read(t, "docs/report.md")
	e := artifact.WrapEdit(tools.Edit{}, fx.cfg)
	_, got, err := call(t, fx.env, e, "toolu_e", map[string]any{"file_path": "docs/report.md", "old_string": "TBD", "new_string": "30"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path() != "docs/report.md" || got[0].Size() != int64(len("# Report\n\nTotal: 30\n")) ||
		!strings.HasPrefix(got[0].MimeType(), "text/markdown") || got[0].ToolUseID() != "toolu_e" {
		t.Fatalf("artifacts %+v", got)
	}
	// artifact false: edited, not registered.
	fx.read(t, "docs/report.md")
	_, got, err = call(t, fx.env, e, "toolu_e2", map[string]any{"file_path": "docs/report.md", "old_string": "30", "new_string": "31", "artifact": false})
	if err != nil || len(got) != 0 {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestNoChangeWriteStillRegisters(t *testing.T) {
	// Writing the content a file already has succeeds: the file the model
	// meant for the user is there, so it is registered.
	fx := newFixture(t)
	fx.file(t, "same.txt", "same\n")
	fx.read(t, "same.txt")
	res, got, err := call(t, fx.env, artifact.WrapWrite(tools.Write{}, fx.cfg), "t", map[string]any{"file_path": "same.txt", "content": "same\n"})
	if err != nil || res.Changed || len(got) != 1 || got[0].Size() != 5 {
		t.Fatalf("%v %+v %+v", err, res, got)
	}
}

func TestNoCollectorNoRegistration(t *testing.T) {
	fx := newFixture(t)
	w := artifact.WrapWrite(tools.Write{}, fx.cfg)
	res, err := tools.Invoke(context.Background(), fx.env, w, "t", mustJSON(t, map[string]any{"file_path": "a.txt", "content": "x"}))
	if err != nil || !res.Changed {
		t.Fatalf("%v %+v", err, res)
	}
	if fx.log.String() != "" {
		t.Fatalf("warnings without a collector: %s", fx.log)
	}
}

// brokenFS fails (or panics on) Open and Stat once a write happened: the
// file is written, but its metadata cannot be read back.
type brokenFS struct {
	vfs.FS
	written atomic.Bool
	panics  bool
}

var errBroken = errors.New("metadata unavailable")

func (b *brokenFS) WriteFile(name string, data []byte, opts vfs.WriteOptions) (vfs.Info, error) {
	info, err := b.FS.WriteFile(name, data, opts)
	b.written.Store(err == nil)
	return info, err
}

func (b *brokenFS) Open(name string) (vfs.File, error) {
	if b.written.Load() {
		if b.panics {
			panic("open exploded")
		}
		return nil, errBroken
	}
	return b.FS.Open(name)
}

func (b *brokenFS) Stat(name string) (vfs.Info, error) {
	if b.written.Load() {
		if b.panics {
			panic("stat exploded")
		}
		return vfs.Info{}, errBroken
	}
	return b.FS.Stat(name)
}

func TestMetadataFailureUsesFallbacks(t *testing.T) {
	fx := newFixture(t)
	fx.env.FS = &brokenFS{FS: fx.env.FS}
	content := "ville,montant\nMünchen,12\nZürich,7\n" // multi-byte: bytes, not runes
	_, got, err := call(t, fx.env, artifact.WrapWrite(tools.Write{}, fx.cfg), "tw", map[string]any{"file_path": "eu.csv", "content": content})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Size() != int64(len(content)) || got[0].Size() == int64(len([]rune(content))) || got[0].MimeType() != "text/csv" {
		t.Fatalf("write fallback %+v", got)
	}
	if !strings.Contains(fx.log.String(), "using the fallback") {
		t.Fatalf("no warning: %s", fx.log)
	}

	fx = newFixture(t)
	fx.file(t, "r.md", "draft\n")
	fx.read(t, "r.md")
	fx.env.FS = &brokenFS{FS: fx.env.FS}
	res, got, err := call(t, fx.env, artifact.WrapEdit(tools.Edit{}, fx.cfg), "te", map[string]any{"file_path": "r.md", "old_string": "draft", "new_string": "final"})
	if err != nil || !res.Changed {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Size() != 0 || got[0].MimeType() != "" || got[0].Path() != "r.md" {
		t.Fatalf("edit fallback %+v", got)
	}
}

func TestRegistrationPanicLeavesResult(t *testing.T) {
	plain, deco := newFixture(t), newFixture(t)
	in := map[string]any{"file_path": "p.txt", "content": "data\n"}
	pres, _, perr := call(t, plain.env, tools.Write{}, "t", in)
	deco.env.FS = &brokenFS{FS: deco.env.FS, panics: true}
	dres, got, derr := call(t, deco.env, artifact.WrapWrite(tools.Write{}, deco.cfg), "t", in)
	if perr != nil || derr != nil {
		t.Fatalf("%v / %v", perr, derr)
	}
	if !reflect.DeepEqual(pres.Blocks, dres.Blocks) || pres.Changed != dres.Changed || pres.Rel != dres.Rel {
		t.Fatalf("result changed:\n%+v\n%+v", pres, dres)
	}
	if len(got) != 0 || !strings.Contains(deco.log.String(), "panicked") {
		t.Fatalf("artifacts %+v, log %s", got, deco.log)
	}
	if b, _ := os.ReadFile(filepath.Join(deco.dir, "p.txt")); string(b) != "data\n" {
		t.Fatalf("file %q", b)
	}
}

func TestOutsideWorkspaceNotRegistered(t *testing.T) {
	// An extra root is writable, but downloads are confined to the
	// workspace: such a file is not an artifact.
	extra := t.TempDir()
	fx := newFixture(t, extra)
	res, got, err := call(t, fx.env, artifact.WrapWrite(tools.Write{}, fx.cfg), "t", map[string]any{"file_path": filepath.Join(extra, "x.txt"), "content": "x"})
	if err != nil || !res.Changed {
		t.Fatalf("%v %+v", err, res)
	}
	if len(got) != 0 || !strings.Contains(fx.log.String(), "outside the workspace") {
		t.Fatalf("artifacts %+v log %s", got, fx.log)
	}
}

func TestSymlinkWriteRegistersTarget(t *testing.T) {
	fx := newFixture(t)
	fx.file(t, "real/data.csv", "a,b\n1,2\n")
	if err := os.Symlink(filepath.Join(fx.dir, "real", "data.csv"), filepath.Join(fx.dir, "link.csv")); err != nil {
		t.Fatal(err)
	}
	fx.read(t, "link.csv")
	_, got, err := call(t, fx.env, artifact.WrapWrite(tools.Write{}, fx.cfg), "t", map[string]any{"file_path": "link.csv", "content": "a,b\n3,4\n"})
	if err != nil || len(got) != 1 || got[0].Path() != "real/data.csv" {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestPermissionIsTheDelegates(t *testing.T) {
	// The delegate asks (Env.Approve) about the path, with or without the
	// flag, and a denial comes back unchanged with nothing registered.
	for _, flag := range []any{nil, true, false, "true"} {
		fx := newFixture(t)
		var asked []tools.Approval
		fx.env.Approve = func(_ context.Context, a tools.Approval) error {
			asked = append(asked, a)
			return tools.Errorf(tools.CodeDenied, "denied by the test")
		}
		in := map[string]any{"file_path": "secret/out.txt", "content": "x"}
		if flag != nil {
			in["artifact"] = flag
		}
		_, got, err := call(t, fx.env, artifact.WrapWrite(tools.Write{}, fx.cfg), "t", in)
		if tools.CodeOf(err) != tools.CodeDenied || !strings.Contains(tools.AgentMessage(err), "denied by the test") || len(got) != 0 {
			t.Fatalf("flag %v: err %v artifacts %+v", flag, err, got)
		}
		if len(asked) != 1 || asked[0].Tool != "Write" || asked[0].Rel != "secret/out.txt" {
			t.Fatalf("flag %v: asked %+v", flag, asked)
		}
		if _, err := os.Stat(filepath.Join(fx.dir, "secret", "out.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("written despite the denial: %v", err)
		}
	}
}

func TestSchemasAndIdentity(t *testing.T) {
	cfg := artifact.Config{}
	for _, c := range []struct {
		tool  tools.Tool
		wrap  func(tools.Tool, artifact.Config) tools.Tool
		param string
		typ   string
	}{
		{tools.Write{}, artifact.WrapWrite, "artifact", "boolean"},
		{tools.Edit{}, artifact.WrapEdit, "artifact", "boolean"},
		{tools.Bash{}, artifact.WrapBash, "artifact_paths", "array"},
	} {
		d := c.wrap(c.tool, cfg)
		if d.Name() != c.tool.Name() || d.Description() != c.tool.Description() || d.ReadOnly() != c.tool.ReadOnly() {
			t.Fatalf("%s: identity changed", c.tool.Name())
		}
		if u, ok := d.(artifact.Decorated); !ok || u.Unwrap() != c.tool {
			t.Fatalf("%s: Unwrap", c.tool.Name())
		}
		var plain, deco struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
			Additional *bool                     `json:"additionalProperties"`
		}
		if err := json.Unmarshal(c.tool.InputSchema(), &plain); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(d.InputSchema(), &deco); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", c.tool.Name(), err)
		}
		if _, ok := plain.Properties[c.param]; ok {
			t.Fatalf("%s: the plain tool already has %s", c.tool.Name(), c.param)
		}
		p := deco.Properties[c.param]
		if p == nil || p["type"] != c.typ || p["description"] == "" {
			t.Fatalf("%s: %s is %v", c.tool.Name(), c.param, p)
		}
		if c.typ == "boolean" && p["default"] != true {
			t.Fatalf("%s: default %v", c.tool.Name(), p["default"])
		}
		if len(deco.Properties) != len(plain.Properties)+1 || !slices.Equal(deco.Required, plain.Required) || deco.Type != "object" ||
			deco.Additional == nil || *deco.Additional {
			t.Fatalf("%s: schema %s", c.tool.Name(), d.InputSchema())
		}
		// The parameter comes last, the delegate's order is kept.
		s := string(d.InputSchema())
		if strings.Index(s, `"file_path"`) > strings.Index(s, `"`+c.param+`"`) && c.tool.Name() != "Bash" {
			t.Fatalf("%s: order %s", c.tool.Name(), s)
		}
	}
}

// oddSchemaTool has a schema the decorator cannot extend.
type oddSchemaTool struct{ tools.Write }

func (oddSchemaTool) InputSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

func TestUnextendableSchemaKeepsTheDelegates(t *testing.T) {
	lb := &logBuf{}
	d := artifact.WrapWrite(oddSchemaTool{}, artifact.Config{Logger: slog.New(slog.NewTextHandler(lb, nil))})
	if string(d.InputSchema()) != `{"type":"object"}` || !strings.Contains(lb.String(), "cannot add the parameter") {
		t.Fatalf("schema %s log %s", d.InputSchema(), lb)
	}
}

// TestEveryToolHasADecision keeps the decorated set in lockstep with the
// list every session's workspace-confined tools come from: a tool added to
// tools.AllTools without a decision here fails this test.
func TestEveryToolHasADecision(t *testing.T) {
	all := tools.AllTools()
	decorated := artifact.Decorate(all, artifact.Config{})
	if len(decorated) != len(all) {
		t.Fatalf("Decorate changed the tool count")
	}
	known := map[string]bool{}
	for _, n := range artifact.DecisionNames() {
		known[n] = true
	}
	for i, tool := range all {
		if !known[tool.Name()] {
			t.Errorf("tool %s has no artifact decision: add it to decisions in decorate.go (nil if it makes no files)", tool.Name())
		}
		if decorated[i].Name() != tool.Name() {
			t.Errorf("Decorate renamed %s", tool.Name())
		}
		delete(known, tool.Name())
	}
	for n := range known {
		t.Errorf("decision for %s, which tools.AllTools no longer has", n)
	}
	if got := strings.Join(artifact.DecoratedNames(), ","); got != "Write,Edit,MultiEdit,NotebookEdit,Bash" {
		t.Fatalf("DecoratedNames = %s", got)
	}
	// Every file tool (what the MCP server and per-workspace environments
	// serve) is part of AllTools, so it has a decision too.
	for _, n := range tools.FileToolNames() {
		if !slices.ContainsFunc(all, func(tl tools.Tool) bool { return tl.Name() == n }) {
			t.Errorf("file tool %s is not in AllTools", n)
		}
	}
	// Decorating twice does not stack decorators.
	twice := artifact.Decorate(decorated, artifact.Config{})
	for i := range twice {
		if twice[i] != decorated[i] {
			t.Fatalf("%s decorated twice", twice[i].Name())
		}
	}
}

func TestDecorateKeepsUnknownTools(t *testing.T) {
	odd := &recordingTool{Tool: tools.Read{}}
	out := artifact.Decorate([]tools.Tool{odd}, artifact.Config{})
	if out[0] != tools.Tool(odd) {
		t.Fatal("a tool without a write decision was wrapped")
	}
}

func TestForkKeepsASubRunsArtifactsApart(t *testing.T) {
	fx := newFixture(t)
	w := artifact.WrapWrite(tools.Write{}, fx.cfg)
	parent := artifact.NewCollector()
	ctx := artifact.WithCollector(context.Background(), parent)
	if _, err := tools.Invoke(ctx, fx.env, w, "p1", mustJSON(t, map[string]any{"file_path": "parent.txt", "content": "p"})); err != nil {
		t.Fatal(err)
	}
	// A sub-run (a subagent) gets its own collector: its tools register
	// there, not in the parent's.
	subCtx, sub := artifact.Fork(ctx)
	if _, err := tools.Invoke(subCtx, fx.env, w, "s1", mustJSON(t, map[string]any{"file_path": "sub/a.txt", "content": "a"})); err != nil {
		t.Fatal(err)
	}
	if _, err := tools.Invoke(subCtx, fx.env, w, "s2", mustJSON(t, map[string]any{"file_path": "sub/b.txt", "content": "b"})); err != nil {
		t.Fatal(err)
	}
	if parent.Len() != 1 || sub.Len() != 2 {
		t.Fatalf("parent %d, sub %d", parent.Len(), sub.Len())
	}
	// The sub-run's result carries its artifacts; the parent surfaces them.
	subResult := sub.Artifacts()
	for _, f := range subResult {
		parent.Add(f)
	}
	var paths []string
	for _, f := range parent.Artifacts() {
		paths = append(paths, f.Path()+"@"+f.ToolUseID())
	}
	if strings.Join(paths, ",") != "parent.txt@p1,sub/a.txt@s1,sub/b.txt@s2" {
		t.Fatalf("parent after surfacing: %v", paths)
	}
}

func TestParallelToolCallsRegisterEveryFile(t *testing.T) {
	fx := newFixture(t)
	w := artifact.WrapWrite(tools.Write{}, fx.cfg)
	c := artifact.NewCollector()
	ctx := artifact.WithCollector(context.Background(), c)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := *fx.env // each call gets its own Env copy, as the agent does
			in := mustJSON(t, map[string]any{"file_path": filepath.Join("par", string(rune('a'+i))+".txt"), "content": strings.Repeat("x", i+1)})
			if _, err := tools.Invoke(ctx, &env, w, "t"+string(rune('a'+i)), in); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := c.Artifacts()
	if len(got) != n {
		t.Fatalf("%d artifacts, want %d", len(got), n)
	}
	for _, f := range got {
		if f.Size() != int64(f.ToolUseID()[1]-'a'+1) || "t"+strings.TrimSuffix(f.FileName(), ".txt") != f.ToolUseID() {
			t.Fatalf("mixed up: %+v", f.ToMessage().Fields())
		}
	}
}
