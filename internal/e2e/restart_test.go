//go:build unix

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// upWithAgent prepares `ferry up` with ferry's own agent on the fake
// provider: the same command and environment for every run of a test, as
// a user re-runs it after a crash.
type upWithAgent struct {
	t    *testing.T
	bin  string
	env  []string
	args []string
	db   string
	ws   string
	srv  *fake.Server
}

func newUpWithAgent(t *testing.T) *upWithAgent {
	t.Helper()
	bin := binarytest.Build(t)
	srv := fake.New(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "data", "ferry.db")
	env := append(os.Environ(),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir,
		"ANTHROPIC_BASE_URL="+srv.BaseURL(fake.Anthropic), "ANTHROPIC_API_KEY=test-key", "FERRY_PROVIDER=anthropic", "FERRY_MODEL=test-model",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	args := []string{"up", "--addr", freeAddr(t), "--db", db, "--workspace", ws, "--agent", "builtin", "--name", "test-machine"}
	return &upWithAgent{t: t, bin: bin, env: env, args: args, db: db, ws: ws, srv: srv}
}

// start runs `ferry up` and returns it with a UI connection.
func (w *upWithAgent) start() (*process, *system, *ui) {
	w.t.Helper()
	p := startProcess(w.t, w.bin, w.env, w.args...)
	s := &system{t: w.t, addr: p.addr, uiToken: strings.TrimSpace(runFerry(w.t, w.bin, w.env, "token", "create", "--kind", "ui", "--db", w.db))}
	return p, s, s.ui()
}

// promptDone sends a prompt and returns its agent.text.done.
func promptDone(t *testing.T, u *ui, sessionID, prompt string) *protocol.TextDone {
	t.Helper()
	u.prompt(sessionID, text(prompt))
	ev := u.collect(sessionID, isType(protocol.TypeTextDone))
	return ev.order[len(ev.order)-1].Payload.(*protocol.TextDone)
}

// TestUpConversationSurvivesKill is issue 17 item 1 end to end: two
// prompts to ferry's agent through `ferry up` as a real process, SIGKILL
// of its process group, the same command again, a third prompt: the model
// request of the third prompt carries the first two prompts and their
// answers. Before the transcript was kept, it held the third prompt only.
func TestUpConversationSurvivesKill(t *testing.T) {
	w := newUpWithAgent(t)
	first, _, u := w.start()
	sess := u.startAdapterSession("builtin")
	w.srv.Script(fake.Reply{Text: []string{"The capital is ", "Paris."}}, fake.Reply{Text: []string{"Noted: ", "teal."}})
	for _, p := range []string{"first prompt: capital of France", "second prompt: my colour is teal"} {
		if done := promptDone(t, u, sess.ID, p); done.StopReason != "end_turn" {
			t.Fatalf("%q ended %+v", p, done)
		}
	}
	u.close()
	first.kill(t)

	second, _, u := w.start()
	u.machine()
	// Replay the history the UI shows, so that the next agent.text.done
	// is the third prompt's.
	if sub := u.subscribe(sess.ID, 0, ""); sub.LastSeq > 0 {
		u.collect(sess.ID, func(m *protocol.Message) bool { return m.Seq >= sub.LastSeq })
	}
	w.srv.Script(fake.Reply{Text: []string{"Paris, and teal."}})
	if done := promptDone(t, u, sess.ID, "third prompt: repeat both"); done.StopReason != "end_turn" || done.Text != "Paris, and teal." {
		t.Fatalf("third prompt ended %+v", done)
	}
	reqs := w.srv.ModelRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	got := agenttest.MessagesJSON(reqs[2])
	for _, want := range []string{"first prompt: capital of France", "The capital is Paris.", "second prompt: my colour is teal", "Noted: teal.", "third prompt: repeat both"} {
		if !strings.Contains(got, want) {
			t.Errorf("the third prompt's model request lacks %q:\n%s", want, got)
		}
	}
	if roles := strings.Join(agenttest.Roles(reqs[2]), ","); roles != "user,assistant,user,assistant,user" {
		t.Errorf("roles %s", roles)
	}
	u.close()
	second.stop(t)
}

// TestUpRestartMidTurn: a turn killed while a tool call waits (a Write
// waiting for its permission answer) ends, after the restart, with the
// reason "ferry restarted during this turn" (agent.error code restarted,
// stop_reason error, not cancelled), and the next prompt's model request
// is one the provider accepts: the fake provider refuses a tool_use
// without its tool_result, and this one carries the restart's error
// result.
func TestUpRestartMidTurn(t *testing.T) {
	w := newUpWithAgent(t)
	first, _, u := w.start()
	sess := u.startAdapterSession("builtin")
	w.srv.Script(fake.Reply{Text: []string{"Writing notes.txt."},
		ToolCalls: []fake.ToolCall{{ID: "toolu_cut1", Name: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "hello\n"}}}})
	u.prompt(sess.ID, text("cut prompt: write notes.txt"))
	ev := u.collect(sess.ID, isType(protocol.TypeInteractionRequest))
	var turnID string
	for _, m := range ev.order {
		if ts, ok := m.Payload.(*protocol.TurnStarted); ok {
			turnID = ts.TurnID
		}
	}
	u.close()
	first.kill(t) // the turn waits for the permission answer

	second, _, u := w.start()
	u.machine()
	u.subscribe(sess.ID, 0, "")
	var agentErr *protocol.AgentError
	ev = u.collect(sess.ID, func(m *protocol.Message) bool {
		if ae, ok := m.Payload.(*protocol.AgentError); ok && ae.TurnID == turnID {
			agentErr = ae
		}
		d, ok := m.Payload.(*protocol.TextDone)
		return ok && d.TurnID == turnID
	})
	done := ev.order[len(ev.order)-1].Payload.(*protocol.TextDone)
	if done.IsCancelled || done.StopReason != "error" {
		t.Fatalf("the cut turn ended %+v; want stop_reason error, not cancelled", done)
	}
	if agentErr == nil || agentErr.Code != client.CodeRestarted || !strings.Contains(agentErr.Message, "ferry restarted during this turn") {
		t.Fatalf("the cut turn's agent.error: %+v; want code %q saying ferry restarted", agentErr, client.CodeRestarted)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("notes.txt was written although nobody allowed it: %v", err)
	}

	w.srv.Script(fake.Reply{Text: []string{"Understood."}})
	if d := promptDone(t, u, sess.ID, "after the restart: go on"); d.StopReason != "end_turn" {
		t.Fatalf("the prompt after the restart ended %+v (the provider refused its history?)", d)
	}
	reqs := w.srv.ModelRequests()
	last := reqs[len(reqs)-1]
	got := agenttest.MessagesJSON(last)
	for _, want := range []string{"cut prompt: write notes.txt", "toolu_cut1", "ferry restarted before this tool call finished", agent.RestartedNote, "after the restart: go on"} {
		if !strings.Contains(got, want) {
			t.Errorf("the request after the restart lacks %q:\n%s", want, got)
		}
	}
	if roles := strings.Join(agenttest.Roles(last), ","); roles != "user,assistant,user,assistant,user" {
		t.Errorf("roles %s", roles)
	}
	u.close()
	second.stop(t)
}
