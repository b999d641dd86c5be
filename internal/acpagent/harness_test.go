package acpagent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// The tests run the real ferry binary; they share one build of it.
func TestMain(m *testing.M) { os.Exit(binarytest.Main(m)) }

// wait bounds every wait: long for a loaded machine, short enough that a
// hang fails.
const wait = 60 * time.Second

// editor is an ACP client (the SDK's client side) driving a ferry acp
// process: it records what it is sent and serves fs/* from its buffers
// (its unsaved text, then the disk) and terminal/* with real processes.
type editor struct {
	t    *testing.T
	cmd  *exec.Cmd
	conn *acp.ClientSideConnection
	in   io.WriteCloser
	logs *syncBuffer
	exit *exited

	mu        sync.Mutex
	updates   []acp.SessionNotification
	asked     []acp.RequestPermissionRequest
	withdrawn int // questions withdrawn before an answer
	answer    func(acp.RequestPermissionRequest) acp.RequestPermissionResponse
	buffers   map[string]string // unsaved text by absolute path
	reads     []string
	writes    map[string]string
	terms     map[string]*term
	nextTerm  int
	changed   chan struct{}
}

type term struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exited is a process's end: done is closed once err is set.
type exited struct {
	done chan struct{}
	err  error
}

// wait waits for the process to end and returns how it did.
func (x *exited) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-x.done:
		return x.err
	case <-time.After(wait):
		t.Fatal("ferry acp did not exit")
	}
	return nil
}

// model is the scripted model ferry's agent calls.
type model struct {
	srv *fake.Server
}

func newModel(t *testing.T) *model { return &model{srv: fake.New(t)} }

// env is the environment of a ferry acp process: its own state and home,
// and the scripted model's key.
func testEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "XDG_STATE_HOME", k == "XDG_DATA_HOME", strings.HasPrefix(k, "ANTHROPIC_"),
			strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "FERRY_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"ANTHROPIC_API_KEY=test-key")
}

// modelArgs point ferry's agent at m.
func (m *model) args() []string {
	return []string{"--provider", "anthropic", "--model", "test-model", "--base-url", m.srv.BaseURL(fake.Anthropic)}
}

// startFerry starts `ferry acp args...` in dir with home as its home.
func startFerry(t *testing.T, dir, home string, args ...string) (*exec.Cmd, io.WriteCloser, io.Reader, *syncBuffer, *exited) {
	t.Helper()
	bin := binarytest.Build(t)
	cmd := exec.Command(bin, append([]string{"acp"}, args...)...) //nolint:gosec // the binary just built
	cmd.Dir = dir
	cmd.Env = testEnv(home)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exit := &exited{done: make(chan struct{})}
	go func() { exit.err = cmd.Wait(); close(exit.done) }()
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-exit.done:
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			<-exit.done
		}
		if t.Failed() {
			t.Logf("ferry acp's log:\n%s", logs.String())
		}
	})
	return cmd, in, out, logs, exit
}

// newEditor starts ferry acp and connects an SDK client to it.
func newEditor(t *testing.T, dir, home string, args ...string) *editor {
	t.Helper()
	cmd, in, out, logs, exit := startFerry(t, dir, home, args...)
	e := &editor{t: t, cmd: cmd, in: in, logs: logs, exit: exit, buffers: map[string]string{}, writes: map[string]string{},
		terms: map[string]*term{}, changed: make(chan struct{}, 1)}
	e.conn = acp.NewClientSideConnection(e, in, out)
	return e
}

func (e *editor) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	e.t.Cleanup(cancel)
	return ctx
}

// initialize initializes with the given capabilities.
func (e *editor) initialize(caps acp.ClientCapabilities) acp.InitializeResponse {
	e.t.Helper()
	r, err := e.conn.Initialize(e.ctx(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps,
		ClientInfo: &acp.Implementation{Name: "ferry-test", Version: "1"}})
	if err != nil {
		e.t.Fatalf("initialize: %v", err)
	}
	return r
}

func (e *editor) newSession(cwd string) acp.NewSessionResponse {
	e.t.Helper()
	r, err := e.conn.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		e.t.Fatalf("session/new: %v", err)
	}
	return r
}

func (e *editor) prompt(sid acp.SessionId, text string) (acp.PromptResponse, error) {
	return e.conn.Prompt(e.ctx(), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// mustPrompt prompts and wants the turn to end with want.
func (e *editor) mustPrompt(sid acp.SessionId, text string, want acp.StopReason) {
	e.t.Helper()
	r, err := e.prompt(sid, text)
	if err != nil {
		e.t.Fatalf("session/prompt: %v", err)
	}
	if r.StopReason != want {
		e.t.Fatalf("the turn ended with %s, want %s", r.StopReason, want)
	}
}

func (e *editor) signal() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds of the updates so far.
func (e *editor) waitFor(what string, cond func([]acp.SessionNotification) bool) {
	e.t.Helper()
	deadline := time.After(wait)
	for {
		e.mu.Lock()
		ok := cond(e.updates)
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-e.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			e.t.Fatalf("no %s within %s; got %s", what, wait, e.dump())
		}
	}
}

func (e *editor) dump() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, u := range e.updates {
		j, _ := json.Marshal(u.Update)
		b.WriteString(string(j) + "\n")
	}
	return b.String()
}

// text is the agent's message text streamed so far; user the user's.
func (e *editor) text(sid acp.SessionId) (agent, user string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var a, u strings.Builder
	for _, n := range e.updates {
		if n.SessionId != sid {
			continue
		}
		if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
			a.WriteString(c.Content.Text.Text)
		}
		if c := n.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
			u.WriteString(c.Content.Text.Text)
		}
	}
	return a.String(), u.String()
}

// --- acp.Client

func (e *editor) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	e.mu.Lock()
	e.updates = append(e.updates, n)
	e.mu.Unlock()
	e.signal()
	return nil
}

func (e *editor) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, p)
	answer := e.answer
	e.mu.Unlock()
	e.signal()
	if answer == nil {
		// Nobody answers here: wait until the question is withdrawn.
		<-ctx.Done()
		e.mu.Lock()
		e.withdrawn++
		e.mu.Unlock()
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return answer(p), nil
}

// choose answers every permission with the option of kind k.
func choose(k acp.PermissionOptionKind) func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return func(p acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		for _, o := range p.Options {
			if o.Kind == k {
				return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(o.OptionId)}
			}
		}
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	}
}

func (e *editor) setAnswer(f func(acp.RequestPermissionRequest) acp.RequestPermissionResponse) {
	e.mu.Lock()
	e.answer = f
	e.mu.Unlock()
}

func (e *editor) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	e.mu.Lock()
	e.reads = append(e.reads, p.Path)
	text, ok := e.buffers[p.Path]
	e.mu.Unlock()
	if !ok {
		b, err := os.ReadFile(p.Path)
		if err != nil {
			return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
		}
		text = string(b)
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

func (e *editor) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	e.mu.Lock()
	e.writes[p.Path] = p.Content
	delete(e.buffers, p.Path)
	e.mu.Unlock()
	if err := os.WriteFile(p.Path, []byte(p.Content), 0o600); err != nil {
		return acp.WriteTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return acp.WriteTextFileResponse{}, nil
}

func (e *editor) CreateTerminal(_ context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	cmd := exec.Command(p.Command, p.Args...) //nolint:gosec // the test's own terminal
	if p.Cwd != nil {
		cmd.Dir = *p.Cwd
	}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	tm := &term{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { tm.err = cmd.Wait(); close(tm.done) }()
	e.mu.Lock()
	e.nextTerm++
	id := "term-" + string(rune('0'+e.nextTerm))
	e.terms[id] = tm
	e.mu.Unlock()
	return acp.CreateTerminalResponse{TerminalId: id}, nil
}

func (e *editor) term(id string) (*term, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tm := e.terms[id]
	if tm == nil {
		return nil, acp.NewInvalidParams(map[string]any{"error": "no terminal " + id})
	}
	return tm, nil
}

func exitCode(tm *term) *int {
	c := tm.cmd.ProcessState.ExitCode()
	return &c
}

func (e *editor) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	tm, err := e.term(p.TerminalId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-tm.done:
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, ctx.Err()
	}
	return acp.WaitForTerminalExitResponse{ExitCode: exitCode(tm)}, nil
}

func (e *editor) TerminalOutput(_ context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	tm, err := e.term(p.TerminalId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	r := acp.TerminalOutputResponse{Output: tm.out.String()}
	select {
	case <-tm.done:
		r.ExitStatus = &acp.TerminalExitStatus{ExitCode: exitCode(tm)}
	default:
	}
	return r, nil
}

func (e *editor) KillTerminal(_ context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	tm, err := e.term(p.TerminalId)
	if err != nil {
		return acp.KillTerminalResponse{}, err
	}
	_ = tm.cmd.Process.Kill()
	return acp.KillTerminalResponse{}, nil
}

func (e *editor) ReleaseTerminal(_ context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	tm, err := e.term(p.TerminalId)
	if err != nil {
		return acp.ReleaseTerminalResponse{}, err
	}
	_ = tm.cmd.Process.Kill()
	return acp.ReleaseTerminalResponse{}, nil
}

// rawPeer speaks JSON-RPC lines to a ferry acp process directly, for the
// bad input no SDK sends.
type rawPeer struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Scanner
	exit *exited
	logs *syncBuffer
}

func newRaw(t *testing.T, dir, home string, args ...string) *rawPeer {
	_, in, out, logs, exit := startFerry(t, dir, home, args...)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	return &rawPeer{t: t, in: in, out: sc, exit: exit, logs: logs}
}

func (r *rawPeer) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// rpcMsg is one line ferry acp wrote.
type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// next reads the next response (notifications skipped); every line must
// be JSON-RPC.
func (r *rawPeer) next() rpcMsg {
	r.t.Helper()
	type res struct {
		m   rpcMsg
		err error
	}
	ch := make(chan res, 1)
	go func() {
		for r.out.Scan() {
			var m rpcMsg
			if err := json.Unmarshal(r.out.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
				ch <- res{err: errors.New("not JSON-RPC on stdout: " + r.out.Text())}
				return
			}
			if m.Method != "" && len(m.ID) == 0 {
				continue
			}
			ch <- res{m: m}
			return
		}
		ch <- res{err: errors.New("stdout closed")}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			r.t.Fatal(x.err)
		}
		return x.m
	case <-time.After(wait):
		r.t.Fatalf("no answer within %s", wait)
	}
	return rpcMsg{}
}
