package claudecode

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// TestSessionTitleChanged: a title Claude Code gives the session
// (stream-json system/session_title_changed) reaches SessionConfig.Title,
// and the client's cleaning makes a valid agent.title of it.
func TestSessionTitleChanged(t *testing.T) {
	var (
		mu     sync.Mutex
		titles []string
	)
	env := openFakeSession(t, "titled", nil, func(c *adapter.SessionConfig) {
		c.Title = func(s string) {
			mu.Lock()
			titles = append(titles, s)
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	if res, err := env.sess.Run(ctx, adaptertest.TextTurn("fix the login"), rec.emit); err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(titles) != 1 || titles[0] != "  Fix the\tlogin bug\u202e " {
		t.Fatalf("titles %q, want the one Claude Code gave", titles)
	}
	if got := protocol.AgentTitleText(titles[0]); got != "Fix the login bug" {
		t.Fatalf("cleaned to %q", got)
	}
}

// titles collects the titles a session hands to SessionConfig.Title.
type titles struct {
	mu  sync.Mutex
	got []string
	ch  chan string
}

func newTitles() *titles { return &titles{ch: make(chan string, 8)} }

func (ts *titles) add(s string) {
	ts.mu.Lock()
	ts.got = append(ts.got, s)
	ts.mu.Unlock()
	ts.ch <- s
}

func (ts *titles) all() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.got...)
}

// TestRealTitleFromClaudeCode: after the first turn that ends with an
// answer, the real CLI is asked for a title (generate_session_title, the
// first prompt as its description, not persisted); the title its model
// made (the fake's, as the JSON Claude Code parses) reaches
// SessionConfig.Title, which the client sends as agent.title. The next
// turn asks no more.
func TestRealTitleFromClaudeCode(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	e.script.add(say("Fixed it."), say("Done."))
	ts := newTitles()
	s := e.openWith(t, e.adapter(), adapter.SessionConfig{Title: ts.add})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	const prompt = "please fix the login bug in auth.go"
	if res, err := s.Run(ctx, adaptertest.TextTurn(prompt), newRecorder(t).emit); err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	select {
	case got := <-ts.ch:
		if got != fake.DefaultTitle || protocol.AgentTitleText(got) != fake.DefaultTitle {
			t.Fatalf("title %q, want the model's %q", got, fake.DefaultTitle)
		}
	case <-ctx.Done():
		t.Fatal("no title from Claude Code")
	}
	reqs := e.srv.TitleRequests()
	if len(reqs) != 1 || !reqs[0].IsClaudeCodeTitle() {
		t.Fatalf("%d title requests, want Claude Code's one", len(reqs))
	}
	if msg, _ := json.Marshal(reqs[0].Messages()); !strings.Contains(string(msg), prompt) {
		t.Errorf("the title request does not carry the first prompt: %s", msg)
	}
	if res, err := s.Run(ctx, adaptertest.TextTurn("and the logout one too, please"), newRecorder(t).emit); err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("second turn: %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n, got := len(e.srv.TitleRequests()), ts.all(); n != 1 || len(got) != 1 {
		t.Fatalf("%d title requests, titles %q after two turns; want one of each", n, got)
	}
}

// TestRealTitleFailureKeepsTurn: when the title's model call fails (the
// provider answers 500), the turn still ends normally with its answer, no
// title is handed over (the master keeps the prompt's), and the log says
// why.
func TestRealTitleFailureKeepsTurn(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	e.script.add(say("Fixed it."))
	// Failing again should Claude Code retry it.
	e.srv.Script(fake.Times(3, fake.Reply{Title: true, Fail: &fake.Failure{Status: http.StatusInternalServerError,
		Header: map[string]string{"x-should-retry": "false"}}})...)
	ts := newTitles()
	s := e.openWith(t, e.adapter(), adapter.SessionConfig{Title: ts.add})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := s.Run(ctx, adaptertest.TextTurn("please fix the login bug in auth.go"), newRecorder(t).emit)
	if err != nil || res.StopReason != protocol.StopEndTurn || res.Text != "Fixed it." {
		t.Fatalf("%+v, %v", res, err)
	}
	// The title call was made and failed; Close waits for it.
	for deadline := time.Now().Add(testTimeout); len(e.srv.TitleRequests()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Claude Code was never asked for a title")
		}
	}
	for deadline := time.Now().Add(testTimeout); !strings.Contains(e.logs.String(), "no title from Claude Code"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the log does not say why there is no title")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ts.all(); len(got) != 0 {
		t.Fatalf("titles %q after a failed title call, want none", got)
	}

}

// generateTitleRequests are the generate_session_title requests the fake
// CLI got.
func generateTitleRequests(t *testing.T, log string) []titleRequest {
	t.Helper()
	var out []titleRequest
	for _, e := range readFakeLog(t, log) {
		var m struct {
			Type    string       `json:"type"`
			Request titleRequest `json:"request"`
		}
		if json.Unmarshal(e.Got, &m) == nil && m.Type == "control_request" && m.Request.Subtype == "generate_session_title" {
			out = append(out, m.Request)
		}
	}
	return out
}

// TestTitleAskedOnceAfterAnswer: the title is asked for once, after the
// first turn that ends with an answer, with the session's first prompt
// that says what it is about (not a slash command), cut to 4 KB, and not
// persisted in Claude Code; its answer, trimmed, reaches
// SessionConfig.Title.
func TestTitleAskedOnceAfterAnswer(t *testing.T) {
	t.Parallel()
	ts := newTitles()
	env := openFakeSession(t, "titles", nil, func(c *adapter.SessionConfig) { c.Title = ts.add })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	long := "fix the login bug " + strings.Repeat("é", 4<<10)
	slash := adaptertest.TextTurn("/review")
	slash.Request.InputType = protocol.InputSlashCommand
	turns := []adapter.Turn{
		slash,
		adaptertest.TextTurn(long),
		adaptertest.TextTurn("and the logout one"),
	}
	for i, turn := range turns {
		if res, err := env.sess.Run(ctx, turn, newRecorder(t).emit); err != nil || res.StopReason != protocol.StopEndTurn {
			t.Fatalf("turn %d: %+v, %v", i, res, err)
		}
		if i == 0 && len(generateTitleRequests(t, env.log)) != 0 {
			t.Fatal("a slash command's turn asked for a title")
		}
	}
	select {
	case got := <-ts.ch:
		if got != "Login bug in auth.go" {
			t.Fatalf("title %q", got)
		}
	case <-ctx.Done():
		t.Fatal("no title")
	}
	if err := env.sess.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := generateTitleRequests(t, env.log)
	if len(reqs) != 1 || len(ts.all()) != 1 {
		t.Fatalf("title requests %+v, titles %q; want one each", reqs, ts.all())
	}
	if r := reqs[0]; r.Persist || len(r.Description) > 4<<10 || !strings.HasPrefix(r.Description, "fix the login bug é") || !utf8.ValidString(r.Description) {
		t.Fatalf("title request persist %v, description of %d bytes %.40q", r.Persist, len(r.Description), r.Description)
	}
}

// TestTitleSlowAnswerHoldsNothing: a title that does not come within
// titleTimeout is given up (the log says so); the session's turns go on
// meanwhile, and no title is handed over.
func TestTitleSlowAnswerHoldsNothing(t *testing.T) {
	old := titleTimeout
	titleTimeout = 300 * time.Millisecond
	t.Cleanup(func() { titleTimeout = old })
	ts := newTitles()
	env := openFakeSession(t, "title-hang", nil, func(c *adapter.SessionConfig) { c.Title = ts.add })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for i, text := range []string{"fix the login bug", "and the logout one"} {
		start := time.Now()
		if res, err := env.sess.Run(ctx, adaptertest.TextTurn(text), newRecorder(t).emit); err != nil || res.StopReason != protocol.StopEndTurn {
			t.Fatalf("turn %d: %+v, %v", i, res, err)
		}
		if d := time.Since(start); d > titleTimeout {
			t.Errorf("turn %d took %v: held up by the title", i, d)
		}
	}
	for !strings.Contains(env.logs.String(), "did not answer the title request within 300ms") {
		select {
		case <-ctx.Done():
			t.Fatalf("the log does not say why there is no title:\n%s", env.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := env.sess.Close(); err != nil {
		t.Fatal(err)
	}
	if n, got := len(generateTitleRequests(t, env.log)), ts.all(); n != 1 || len(got) != 0 {
		t.Fatalf("%d title requests, titles %q; want one request, no title", n, got)
	}
}
