package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// TestMain turns the test binary into the scripted ACP peer when the
// environment names a script: the tests run real agent processes.
func TestMain(m *testing.M) {
	if os.Getenv(acppeer.EnvScript) != "" {
		acppeer.Main()
	}
	os.Exit(m.Run())
}

// peerEnv is a scripted peer: its adapter, workspace, log of what it
// received and ferry's own log.
type peerEnv struct {
	a      *Adapter
	ws     string
	script string
	recv   string
	logs   *adaptertest.LogBuffer
}

func newPeer(t *testing.T, script acppeer.Script) *peerEnv {
	t.Helper()
	dir := t.TempDir()
	p := &peerEnv{ws: filepath.Join(dir, "ws"), script: filepath.Join(dir, "script.json"), recv: filepath.Join(dir, "recv.log"), logs: &adaptertest.LogBuffer{}}
	if err := os.Mkdir(p.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	p.setScript(t, script)
	a, err := New(Config{
		Command: []string{os.Args[0], "-test.run=^$"},
		Name:    "peer",
		Env:     []string{acppeer.EnvScript + "=" + p.script, acppeer.EnvLog + "=" + p.recv},
		Logger:  p.logs.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	p.a = a
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", p.logs.String())
		}
	})
	return p
}

func (p *peerEnv) setScript(t *testing.T, s acppeer.Script) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.script, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// open opens a session in mode; Close runs at cleanup.
func (p *peerEnv) open(t *testing.T, mode string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := adaptertest.Open(t, ctx, p.a, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: p.ws}, Mode: mode})
	return s.(*session)
}

// received returns the messages the peer got, decoded.
func (p *peerEnv) received(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(p.recv)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("peer log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// receivedMethod returns the params of each message of method the peer got.
func (p *peerEnv) receivedMethod(t *testing.T, method string) []map[string]any {
	var out []map[string]any
	for _, m := range p.received(t) {
		if m["method"] == method {
			params, _ := m["params"].(map[string]any)
			out = append(out, params)
		}
	}
	return out
}

// responses returns the results (or errors) of the responses the peer got.
func (p *peerEnv) responses(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, m := range p.received(t) {
		if _, ok := m["method"]; ok {
			continue
		}
		out = append(out, m)
	}
	return out
}

// recorder is a turn's Emit: adaptertest's recorder, whose emit fails
// once the turn's context has ended, recording nothing.
type recorder struct{ *adaptertest.Recorder }

func newRecorder() *recorder { return &recorder{adaptertest.NewRecorder()} }

func (r *recorder) emit(ctx context.Context, typ string, payload any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.Emit(ctx, typ, payload)
}

// ask waits for the next interaction request.
func (r *recorder) ask(t *testing.T) *protocol.InteractionRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.NextAsk(t, ctx)
}

// turn builds a turn from prompt text with refs.
func turn(text string, refs ...protocol.FileReference) adapter.Turn {
	return adapter.Turn{ID: protocol.NewID(), Request: &protocol.PromptRequest{PromptText: text, FileReferences: refs, InputType: protocol.InputText}, Prompt: fileref.Parse(text, refs)}
}

// run runs a turn with a bounded context.
func run(t *testing.T, s *session, tn adapter.Turn) (*recorder, adapter.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec := newRecorder()
	res, err := s.Run(ctx, tn, rec.emit)
	return rec, res, err
}

// rpcCode returns a response's error code and ferry_code.
func rpcCode(t *testing.T, resp map[string]any) (code, ferry int) {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error in %v", resp)
	}
	data, _ := e["data"].(map[string]any)
	fc, _ := data["ferry_code"].(float64)
	return int(e["code"].(float64)), int(fc)
}
