package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// noModel is a provider for paths that never call the model.
type noModel struct{}

func (noModel) Name() string  { return "none" }
func (noModel) Model() string { return "none-1" }
func (noModel) Stream(context.Context, llm.Request, func(llm.Event) error) (*llm.Response, error) {
	return nil, &llm.Error{Kind: llm.KindBadRequest, Message: "no model here"}
}
func (noModel) CountTokens(context.Context, llm.Request) (int, error) { return 0, llm.ErrNoTokenCount }

// TestResultTakesTheCollectorOnEveryPath: whatever way a prompt ends —
// each slash command, a bad request, a provider failure, a cancel — its
// result carries what its collector holds (here one file registered
// before the path ran, as a sub-run's or an earlier call's would be).
func TestResultTakesTheCollectorOnEveryPath(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Provider: noModel{}, Workspace: t.TempDir(), Artifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	emit := func(context.Context, string, any) error { return nil }
	turnOf := func(inputType, text string, o *protocol.ConfigOverrides) Turn {
		req := &protocol.PromptRequest{PromptText: fileref.Escape(text), InputType: inputType, ConfigOverrides: o}
		return Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(req.PromptText, nil)}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		turn Turn
		stop string
	}{
		{"/cost", context.Background(), turnOf(protocol.InputSlashCommand, "/cost", nil), StopEndTurn},
		{"/help", context.Background(), turnOf(protocol.InputSlashCommand, "/help", nil), StopEndTurn},
		{"/mode", context.Background(), turnOf(protocol.InputSlashCommand, "/mode review", nil), StopEndTurn},
		{"/clear", context.Background(), turnOf(protocol.InputSlashCommand, "/clear", nil), StopEndTurn},
		{"unknown command", context.Background(), turnOf(protocol.InputSlashCommand, "/nope", nil), StopEndTurn},
		{"/compact", context.Background(), turnOf(protocol.InputSlashCommand, "/compact", nil), StopEndTurn},
		{"bad rule", context.Background(), turnOf(protocol.InputText, "x", &protocol.ConfigOverrides{DeniedTools: []string{""}}), StopError},
		{"provider error", context.Background(), turnOf(protocol.InputText, "x", nil), StopError},
		{"cancelled", cancelled, turnOf(protocol.InputText, "x", nil), StopCancelled},
	}
	for _, c := range cases {
		col := artifact.NewCollector()
		f, err := artifact.New("out/early.csv", 3, artifact.WithToolUseID("t0"))
		if err != nil {
			t.Fatal(err)
		}
		col.Add(f)
		ctx, done := context.WithTimeout(c.ctx, 10*time.Second)
		res, _ := a.runWith(ctx, c.turn, emit, col)
		done()
		if res.StopReason != c.stop || len(res.Artifacts) != 1 || res.Artifacts[0] != f {
			t.Errorf("%s: stop %s artifacts %d", c.name, res.StopReason, len(res.Artifacts))
		}
	}
	// Busy: the prompt never ran, and says so with the collector's list.
	if !a.begin() {
		t.Fatal("busy")
	}
	res, err := a.Run(context.Background(), turnOf(protocol.InputText, "x", nil), emit)
	a.end()
	if !errors.Is(err, ErrBusy) || res.Artifacts == nil {
		t.Fatalf("busy: %v %+v", err, res)
	}
}
