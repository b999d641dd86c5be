package builtin_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/protocol"
)

// titleKey is the API key of the title tests: no log line may hold it.
const titleKey = "sk-title-test-secret-key"

// lockedBuffer is a log sink safe for the title call's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openTitled opens a session with titles on against srv; its titles go to
// the channel, its log to the buffer.
func openTitled(t *testing.T, f fake.Format, srv *fake.Server) (adapter.Session, chan string, *lockedBuffer) {
	t.Helper()
	titles, logs := make(chan string, 4), &lockedBuffer{}
	cfg := builtin.Config{
		Getenv:   func(string) string { return "" },
		Titles:   true,
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: titleKey},
	}
	s, err := builtin.New(cfg).Open(context.Background(), adapter.SessionConfig{SessionID: protocol.NewID(),
		Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}, Title: func(s string) { titles <- s }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, titles, logs
}

// TestModelTitle: after the first turn that ends with an answer, ferry's
// agent asks the model once (no tools, 40 tokens) for a short title of
// the exchange and hands it to SessionConfig.Title; later turns ask
// nothing more.
func TestModelTitle(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		s, titles, _ := openTitled(t, f, srv)
		srv.Script(fake.Reply{Text: []string{"The login bug is fixed."}}, fake.Reply{Title: true, Text: []string{"\"Login bug fix.\""}},
			fake.Reply{Text: []string{"second answer"}})
		ctx := testCtx(t)
		if _, err := s.Run(ctx, turn("please fix the login bug"), newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-titles:
			if got != "Login bug fix" {
				t.Fatalf("title %q", got)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no title from the model")
		}
		reqs, titleReqs := srv.ModelRequests(), srv.TitleRequests()
		if len(reqs) != 1 || len(titleReqs) != 1 || titleReqs[0].Body["max_tokens"] != float64(40) && titleReqs[0].Body["max_completion_tokens"] != float64(40) {
			t.Fatalf("%d turn and %d title requests (%v), want one each, the title's of 40 tokens", len(reqs), len(titleReqs), titleReqs)
		}
		if _, err := s.Run(ctx, turn("and another"), newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-titles:
			t.Fatalf("a second turn made another title %q", got)
		case <-time.After(200 * time.Millisecond):
		}
		if n, m := len(srv.ModelRequests()), len(srv.TitleRequests()); n != 2 || m != 1 {
			t.Fatalf("%d turn and %d title requests after two turns, want 2 and 1", n, m)
		}
	})
}

// TestModelTitleFailureCostsOnlyTheTitle: a title call that fails (the
// provider's error) or hangs never fails or holds up a turn: the turns end
// as they would without titles, no title is made, the log says why without
// the API key, and closing the session ends a hanging title call at once.
func TestModelTitleFailureCostsOnlyTheTitle(t *testing.T) {
	t.Parallel()
	failures := map[string]fake.Reply{
		"error": {Title: true, Fail: &fake.Failure{Status: 401, Message: "invalid x-api-key"}},
		"hangs": {Title: true, Text: []string{"Never"}, Hold: true},
	}
	for name, failure := range failures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
				s, titles, logs := openTitled(t, f, srv)
				srv.Script(fake.Reply{Text: []string{"first answer"}}, failure, fake.Reply{Text: []string{"second answer"}})
				ctx := testCtx(t)
				for i, prompt := range []string{"first", "second"} {
					start := time.Now()
					res, err := s.Run(ctx, turn(prompt), newRecorder().emit)
					if err != nil || res.StopReason != protocol.StopEndTurn || res.Text != prompt+" answer" {
						t.Fatalf("turn %d: %+v, %v", i, res, err)
					}
					if d := time.Since(start); d > 10*time.Second {
						t.Fatalf("turn %d took %s", i, d)
					}
					if i == 0 {
						waitUntil(t, func() bool { return len(srv.TitleRequests()) == 1 }, "no title request")
					}
				}
				if name == "hangs" {
					if strings.Contains(logs.String(), "no title") {
						t.Fatalf("the hanging title call ended early: %s", logs)
					}
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
				}
				waitUntil(t, func() bool { return strings.Contains(logs.String(), "no title from the model") }, "the failed title call was not logged")
				select {
				case got := <-titles:
					t.Fatalf("a failed title call made the title %q", got)
				default:
				}
				if strings.Contains(logs.String(), titleKey) {
					t.Fatalf("the log holds the API key: %s", logs)
				}
			})
		})
	}
}

// waitUntil polls cond for up to 5 s (what "at once" allows on a loaded
// machine).
func waitUntil(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSlashCommandsAdvertised: Open tells the session's commands
// (agent.commands), so a UI's or an editor's menu lists ferry's slash
// commands, and each is one the agent runs.
func TestSlashCommandsAdvertised(t *testing.T) {
	srv := fake.New(t)
	var got []protocol.AgentCommand
	cfg := builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(fake.Anthropic), Model: "test-model", BaseURL: srv.BaseURL(fake.Anthropic), APIKey: titleKey},
	}
	s, err := builtin.New(cfg).Open(context.Background(), adapter.SessionConfig{SessionID: protocol.NewID(),
		Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}, Commands: func(c []protocol.AgentCommand) { got = c }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "compact,cost,clear,mode,help" {
		t.Fatalf("Open advertised %v, want ferry's five slash commands", names)
	}
}
