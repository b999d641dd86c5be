package builtin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/protocol"
)

// TestModelTitle: after the first turn that ends with an answer, ferry's
// agent asks the model once (no tools, a few tokens) for a short title of
// the exchange and hands it to SessionConfig.Title; later turns ask
// nothing more.
func TestModelTitle(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		titles := make(chan string, 4)
		cfg := builtin.Config{
			Getenv:   func(string) string { return "" },
			Titles:   true,
			Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "test-key"},
		}
		s, err := builtin.New(cfg).Open(context.Background(), adapter.SessionConfig{SessionID: protocol.NewID(),
			Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}, Title: func(s string) { titles <- s }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		srv.Script(fake.Reply{Text: []string{"The login bug is fixed."}}, fake.Reply{Text: []string{"\"Login bug fix.\""}},
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
		reqs := srv.ModelRequests()
		if len(reqs) != 2 || len(reqs[1].ToolNames()) != 0 || !strings.Contains(reqs[1].System(), "title") {
			t.Fatalf("%d model requests (the title's with tools?), want the turn's and a tool-less title's", len(reqs))
		}
		if _, err := s.Run(ctx, turn("and another"), newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-titles:
			t.Fatalf("a second turn made another title %q", got)
		case <-time.After(200 * time.Millisecond):
		}
		if n := len(srv.ModelRequests()); n != 3 {
			t.Fatalf("%d model requests after two turns, want 3", n)
		}
	})
}
