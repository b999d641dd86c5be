package builtin_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/transcript"
	"github.com/ferry-dev/ferry/protocol"
)

// reopenable opens sessions of one session id on one workspace with the
// client's transcript store, as the client does before and after a
// restart.
type reopenable struct {
	t    *testing.T
	srv  *fake.Server
	f    fake.Format
	id   string
	ws   string
	path string // transcripts.db
	// ask: no rules, so writes wait for a permission answer.
	ask bool
}

func newReopenable(t *testing.T, srv *fake.Server, f fake.Format) *reopenable {
	return &reopenable{t: t, srv: srv, f: f, id: protocol.NewID(), ws: t.TempDir(), path: filepath.Join(t.TempDir(), "transcripts.db")}
}

// open opens the store and the session; close them with the returned func.
func (r *reopenable) open() (*builtin.Session, func()) {
	r.t.Helper()
	st, err := transcript.Open(context.Background(), r.path, transcript.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	allowEdit, err := permission.Parse("Edit")
	if err != nil {
		r.t.Fatal(err)
	}
	rules := permission.Rules{Allow: []permission.Rule{allowEdit}}
	if r.ask {
		rules = permission.Rules{}
	}
	ad := builtin.New(builtin.Config{
		Getenv:   func(string) string { return "" },
		Rules:    rules,
		Provider: provider.Config{Provider: string(r.f), Model: "test-model", BaseURL: r.srv.BaseURL(r.f), APIKey: "test-key"},
	})
	s, err := ad.Open(context.Background(), adapter.SessionConfig{SessionID: r.id, Workspace: protocol.Workspace{ID: "w", Name: "w", Path: r.ws}, Transcripts: st})
	if err != nil {
		r.t.Fatal(err)
	}
	closed := false
	done := func() {
		if closed {
			return
		}
		closed = true
		if err := s.Close(); err != nil {
			r.t.Error(err)
		}
		if err := st.Close(); err != nil {
			r.t.Error(err)
		}
	}
	r.t.Cleanup(done)
	return s.(*builtin.Session), done
}

func runOK(t *testing.T, s *builtin.Session, text string) {
	t.Helper()
	res, err := s.Run(testCtx(t), turn(text), newRecorder().emit)
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("%q: %+v %v", text, res, err)
	}
}

// TestConversationSurvivesReopen: open → two prompts → close → open again
// with the same state → the third prompt's model request carries the first
// two prompts, their answers and their tool results; what was read before
// can be edited without reading it again.
func TestConversationSurvivesReopen(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		r := newReopenable(t, srv, f)
		if err := os.WriteFile(filepath.Join(r.ws, "notes.txt"), []byte("the word is pelican\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, closeFirst := r.open()
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{{ID: "call_read1", Name: "Read", Input: map[string]any{"file_path": "notes.txt"}}}},
			fake.Reply{Text: []string{"The word is pelican."}},
			fake.Reply{Text: []string{"Noted: blue."}},
		)
		runOK(t, s, "first prompt: what is the word")
		runOK(t, s, "second prompt: remember blue")
		closeFirst()

		s, _ = r.open()
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{{ID: "call_edit1", Name: "Edit", Input: map[string]any{"file_path": "notes.txt", "old_string": "pelican", "new_string": "heron"}}}},
			fake.Reply{Text: []string{"Changed."}},
		)
		runOK(t, s, "third prompt: change the word")
		reqs := srv.ModelRequests()
		third := reqs[len(reqs)-2]
		got := agenttest.MessagesJSON(third)
		for _, want := range []string{"first prompt: what is the word", "the word is pelican", "The word is pelican.", "second prompt: remember blue", "Noted: blue.", "third prompt: change the word"} {
			if !strings.Contains(got, want) {
				t.Errorf("the third prompt's request lacks %q:\n%s", want, got)
			}
		}
		if roles := strings.Join(agenttest.Roles(third), ","); !strings.HasPrefix(roles, "user,assistant,") {
			t.Errorf("roles %s", roles)
		}
		// The Read of the first session still counts: the Edit went through.
		if res := agenttest.ToolResults(reqs[len(reqs)-1]); len(res) != 1 || res[0].IsError {
			t.Fatalf("Edit after the reopen: %+v", res)
		}
		if b, _ := os.ReadFile(filepath.Join(r.ws, "notes.txt")); string(b) != "the word is heron\n" {
			t.Fatalf("file %q", b)
		}
	})
}

// TestCutTurnLeavesValidHistory: a turn stopped mid-tool by a restart (here
// the session is opened again while the first one still waits for a
// permission answer, exactly what its transcript holds after a kill)
// continues with a history the provider accepts: the unanswered call gets
// an error result saying ferry restarted, and the turn ends with a note.
// The fake provider refuses a request with an unanswered tool call.
func TestCutTurnLeavesValidHistory(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		r := newReopenable(t, srv, f)
		r.ask = true
		first, _ := r.open()
		srv.Script(fake.Reply{Text: []string{"Writing it."}, ToolCalls: []fake.ToolCall{{ID: "call_w1", Name: "Write", Input: map[string]any{"file_path": "f.txt", "content": "x"}}}})
		rec := newRecorder()
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			_, _ = first.Run(ctx, turn("cut prompt: write f.txt"), rec.emit)
		}()
		rec.waitFor(t, testCtx(t), protocol.TypeInteractionRequest)

		second, _ := r.open()
		srv.Script(fake.Reply{Text: []string{"Going on."}})
		runOK(t, second, "after the restart")
		req := srv.ModelRequests()[1]
		got := agenttest.MessagesJSON(req)
		for _, want := range []string{"cut prompt: write f.txt", "Writing it.", "ferry restarted before this tool call finished", agent.RestartedNote, "after the restart"} {
			if !strings.Contains(got, want) {
				t.Errorf("the request after the restart lacks %q:\n%s", want, got)
			}
		}
		if roles := strings.Join(agenttest.Roles(req), ","); f == fake.Anthropic && roles != "user,assistant,user,assistant,user" {
			t.Errorf("roles %s, want user,assistant,user,assistant,user", roles)
		}
		cancel()
		<-ended
	})
}

// TestStoppingIsNotACancelByTheUser: a turn cancelled because ferry stops
// (the client cancels with adapter.ErrStopping) leaves a history that says
// ferry restarted, not that the user cancelled; the session reopened
// after the restart sees the same.
func TestStoppingIsNotACancelByTheUser(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	r := newReopenable(t, srv, fake.Anthropic)
	r.ask = true
	first, closeFirst := r.open()
	srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{ID: "call_w1", Name: "Write", Input: map[string]any{"file_path": "f.txt", "content": "x"}}}})
	rec := newRecorder()
	ctx, cancel := context.WithCancelCause(testCtx(t))
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = first.Run(ctx, turn("write f.txt"), rec.emit)
	}()
	rec.waitFor(t, testCtx(t), protocol.TypeInteractionRequest)
	cancel(adapter.ErrStopping)
	<-ended
	check := func(where string, s *builtin.Session) {
		t.Helper()
		h := s.Agent().History()
		b, _ := json.Marshal(h)
		if got := string(b); !strings.Contains(got, "ferry restarted before this tool call finished") || strings.Contains(got, "by the user") {
			t.Fatalf("%s: the history says %s", where, got)
		}
	}
	check("after the stop", first)
	closeFirst()
	second, _ := r.open()
	check("after the restart", second)
}

// TestDamagedTranscriptStartsFresh: a transcript whose row does not decode
// neither fails the open nor the prompt: the session starts fresh, and its
// next step replaces the damaged transcript.
func TestDamagedTranscriptStartsFresh(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	r := newReopenable(t, srv, fake.Anthropic)
	s, closeFirst := r.open()
	srv.Script(fake.Reply{Text: []string{"One."}})
	runOK(t, s, "before the damage")
	closeFirst()

	db, err := sql.Open("sqlite", "file:"+r.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE messages SET data = '{"role":' WHERE idx = 1`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	s, closeSecond := r.open()
	srv.Script(fake.Reply{Text: []string{"Two."}})
	runOK(t, s, "after the damage")
	if roles := strings.Join(agenttest.Roles(srv.ModelRequests()[1]), ","); roles != "user" {
		t.Fatalf("the session did not start fresh: roles %s", roles)
	}
	closeSecond()

	s, _ = r.open()
	srv.Script(fake.Reply{Text: []string{"Three."}})
	runOK(t, s, "third")
	if got := agenttest.MessagesJSON(srv.ModelRequests()[2]); !strings.Contains(got, "after the damage") || !strings.Contains(got, "Two.") || strings.Contains(got, "before the damage") {
		t.Fatalf("the fresh transcript was not kept: %s", got)
	}
}

// TestRewindAcrossReopen: a turn run before a restart can still be rewound
// after it (the turn starts are saved with the conversation), and a rewind
// is saved too, so a restart after it does not bring the rewound turn back.
func TestRewindAcrossReopen(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	r := newReopenable(t, srv, fake.Anthropic)
	s, closeFirst := r.open()
	srv.Script(fake.Reply{Text: []string{"FIRST-ANSWER"}}, fake.Reply{Text: []string{"SECOND-ANSWER"}}, fake.Reply{Text: []string{"THIRD-ANSWER"}})
	runOK(t, s, "FIRST-PROMPT")
	second, third := turn("SECOND-PROMPT"), turn("THIRD-PROMPT")
	for _, tr := range []adapter.Turn{second, third} {
		if res, err := s.Run(testCtx(t), tr, newRecorder().emit); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("%+v %v", res, err)
		}
	}
	closeFirst()

	s, closeSecond := r.open()
	if err := s.RewindConversation(third.ID); err != nil {
		t.Fatalf("rewind of a turn from before the restart: %v", err)
	}
	closeSecond()

	s, _ = r.open()
	srv.Script(fake.Reply{Text: []string{"FOURTH-ANSWER"}})
	runOK(t, s, "FOURTH-PROMPT")
	reqs := srv.ModelRequests()
	msgs := agenttest.MessagesJSON(reqs[len(reqs)-1])
	for _, want := range []string{"FIRST-PROMPT", "FIRST-ANSWER", "SECOND-PROMPT", "SECOND-ANSWER", "FOURTH-PROMPT"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("the request after the rewind and a restart lacks %q: %s", want, msgs)
		}
	}
	if strings.Contains(msgs, "THIRD-PROMPT") || strings.Contains(msgs, "THIRD-ANSWER") {
		t.Errorf("the rewound turn came back after a restart: %s", msgs)
	}
	// The second turn's start survived both restarts too.
	if err := s.RewindConversation(second.ID); err != nil {
		t.Fatalf("rewind after two restarts: %v", err)
	}
}
