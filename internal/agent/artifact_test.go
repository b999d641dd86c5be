package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// These tests run the agent with artifacts on against the fake provider
// server, through the real provider SDKs, in both wire formats.

var artifactFormats = []fake.Format{fake.Anthropic, fake.OpenAI}

// fakeAgent opens an agent with artifacts on against srv in format f.
func fakeAgent(t *testing.T, srv *fake.Server, f fake.Format, mut func(*agent.Config)) (*agent.Agent, string) {
	t.Helper()
	p, err := provider.FromEnv(func(string) string { return "" },
		provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	return newAgent(t, p, func(c *agent.Config) {
		c.Artifacts = true
		c.Headless = true
		c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Write"}, {Tool: "Edit"}, {Tool: "Bash"}}}
		if mut != nil {
			mut(c)
		}
	})
}

func fakeCall(id, name string, in map[string]any) fake.ToolCall {
	return fake.ToolCall{ID: id, Name: name, Input: in}
}

func reply(calls ...fake.ToolCall) fake.Reply { return fake.Reply{ToolCalls: calls} }

const salesCSV = "region,sales\nnorth,10\nsouth,20\n"

// csvAndReport is the scenario of the issue: the model writes a CSV,
// reads a report, edits it, and answers.
func csvAndReport(f fake.Format) []fake.Reply {
	id := func(s string) string {
		if f == fake.OpenAI {
			return "call_" + s
		}
		return "toolu_" + s
	}
	return []fake.Reply{
		reply(fakeCall(id("csv"), "Write", map[string]any{"file_path": "out/sales.csv", "content": salesCSV})),
		reply(fakeCall(id("read"), "Read", map[string]any{"file_path": "report.md"})),
		reply(fakeCall(id("edit"), "Edit", map[string]any{"file_path": "report.md", "old_string": "TBD", "new_string": "30"}),
			fakeCall(id("tmp"), "Write", map[string]any{"file_path": "scratch.py", "content": "print(1)\n", "artifact": false})),
		{Text: []string{"Wrote the CSV and updated the report."}},
	}
}

func artifactEvents(rec *recorder) []*protocol.Artifact {
	var out []*protocol.Artifact
	for _, p := range rec.of(protocol.TypeArtifact) {
		out = append(out, p.(*protocol.Artifact))
	}
	return out
}

func TestArtifactsCSVAndReport(t *testing.T) {
	t.Parallel()
	for _, f := range artifactFormats {
		t.Run(string(f), func(t *testing.T) {
			srv := fake.New(t)
			a, dir := fakeAgent(t, srv, f, nil)
			if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte("# Sales\n\nTotal: TBD\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			srv.Script(csvAndReport(f)...)
			rec := newRecorder()
			turn := textTurn("make the sales CSV and update the report")
			res, err := a.Run(testCtx(t), turn, rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != agent.StopEndTurn {
				t.Fatalf("result %+v", res)
			}
			// The result carries both, in order; the scratch file is not one.
			if got := pathsOf(res.Artifacts); got != "out/sales.csv,report.md" {
				t.Fatalf("result artifacts %s", got)
			}
			csv, report := res.Artifacts[0], res.Artifacts[1]
			if csv.Size() != int64(len(salesCSV)) || csv.MimeType() != "text/csv" || !strings.HasSuffix(csv.ToolUseID(), "csv") {
				t.Fatalf("csv %+v", csv.ToMessage().Fields())
			}
			if report.Size() != int64(len("# Sales\n\nTotal: 30\n")) || !strings.HasPrefix(report.MimeType(), "text/markdown") || !strings.HasSuffix(report.ToolUseID(), "edit") {
				t.Fatalf("report %+v", report.ToMessage().Fields())
			}

			// One agent.artifact per file, right after the tool.finished
			// of the call that made it.
			evs := artifactEvents(rec)
			if len(evs) != 2 {
				t.Fatalf("%d agent.artifact events", len(evs))
			}
			idPattern := regexp.MustCompile(`^art_[A-Za-z0-9_-]+$`)
			for i, ev := range evs {
				want := res.Artifacts[i]
				if ev.TurnID != turn.ID || !idPattern.MatchString(ev.ArtifactID) || ev.Path != want.Path() || ev.FileName != want.FileName() ||
					ev.Size != want.Size() || ev.MimeType != want.MimeType() || ev.ToolUseID != want.ToolUseID() {
					t.Fatalf("event %d %+v, want %+v", i, ev, want.ToMessage().Fields())
				}
			}
			if evs[0].ArtifactID == evs[1].ArtifactID {
				t.Fatal("artifact ids repeat")
			}
			all := rec.all()
			for _, ev := range evs {
				at := -1
				for i, e := range all {
					if e.payload == any(ev) {
						at = i
					}
				}
				prev := all[at-1].payload.(*protocol.ToolFinished)
				if prev.ToolUseID != ev.ToolUseID || prev.Status != protocol.ToolOK {
					t.Fatalf("agent.artifact for %s follows %+v", ev.Path, prev)
				}
			}

			// Each artifact is on the assistant message whose call made it.
			h := a.History()
			var got []string
			for _, m := range h {
				if m.Role != llm.RoleAssistant {
					if len(m.Artifacts) > 0 {
						t.Fatalf("artifacts on a %s message", m.Role)
					}
					continue
				}
				var uses []string
				for _, b := range m.Content {
					if b.Type == llm.BlockToolUse {
						uses = append(uses, b.ToolName)
					}
				}
				var ps []string
				for _, x := range m.Artifacts {
					ps = append(ps, x.Path())
				}
				got = append(got, strings.Join(uses, "+")+"="+strings.Join(ps, "+"))
			}
			if strings.Join(got, " ") != "Write=out/sales.csv Read= Edit+Write=report.md =" {
				t.Fatalf("attachment %v", got)
			}

			// The model never sees artifacts: not in any request it got,
			// while the Write and Edit schemas offer the parameter.
			for _, req := range srv.ModelRequests() {
				if strings.Contains(agenttest.MessagesJSON(req), `"artifacts"`) {
					t.Fatal("artifacts were sent to the model")
				}
			}
			if !strings.Contains(string(srv.ModelRequests()[0].Raw), `"artifact"`) {
				t.Fatal("the tool schema lacks the artifact parameter")
			}
			// The history (the transcript) round-trips through JSON with them.
			b, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			var back []llm.Message
			if err := json.Unmarshal(b, &back); err != nil || len(back[1].Artifacts) != 1 || back[1].Artifacts[0] != h[1].Artifacts[0] {
				t.Fatalf("history round trip: %v", err)
			}
		})
	}
}

func pathsOf[T interface{ Path() string }](fs []T) string {
	var ps []string
	for _, f := range fs {
		ps = append(ps, f.Path())
	}
	return strings.Join(ps, ",")
}

func TestArtifactsSwitch(t *testing.T) {
	t.Parallel()
	p := newMem(step{text: []string{"ok"}})
	off, _ := newAgent(t, p, nil)
	if _, err := off.Run(testCtx(t), textTurn("hi"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	for _, s := range p.requests()[0].Tools {
		if strings.Contains(string(s.InputSchema), `"artifact`) {
			t.Fatalf("artifacts off, but %s has the parameter: %s", s.Name, s.InputSchema)
		}
	}
	p = newMem(step{text: []string{"ok"}})
	on, _ := newAgent(t, p, func(c *agent.Config) { c.Artifacts = true })
	if _, err := on.Run(testCtx(t), textTurn("hi"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Write": `"artifact"`, "Edit": `"artifact"`, "MultiEdit": `"artifact"`, "NotebookEdit": `"artifact"`, "Bash": `"artifact_paths"`}
	for _, s := range p.requests()[0].Tools {
		has := strings.Contains(string(s.InputSchema), `"artifact`)
		if w, ok := want[s.Name]; has != ok || (ok && !strings.Contains(string(s.InputSchema), w)) {
			t.Fatalf("artifacts on: %s schema %s", s.Name, s.InputSchema)
		}
	}
	if strings.Join(on.ToolNames(), ",") != strings.Join(off.ToolNames(), ",") {
		t.Fatal("the switch changed the tool names")
	}
}

// TestArtifactsOnEveryExitPath: a file written before the prompt ends in
// any way is in the result.
func TestArtifactsOnEveryExitPath(t *testing.T) {
	t.Parallel()
	csv := func(f fake.Format) fake.Reply {
		return reply(fake.ToolCall{Name: "Write", Input: map[string]any{"file_path": "out/sales.csv", "content": salesCSV}})
	}
	two := 2
	cases := []struct {
		name   string
		script func(f fake.Format) []fake.Reply
		over   *protocol.ConfigOverrides
		stop   string
		errIs  func(error) bool
		cancel bool // cancel as soon as the artifact event is out
	}{
		{"completed", func(f fake.Format) []fake.Reply { return []fake.Reply{csv(f), {Text: []string{"done"}}} }, nil, agent.StopEndTurn, nil, false},
		{"max turns", func(f fake.Format) []fake.Reply {
			return []fake.Reply{csv(f), reply(fake.ToolCall{Name: "Glob", Input: map[string]any{"pattern": "*"}})}
		}, &protocol.ConfigOverrides{MaxTurns: &two}, agent.StopMaxTurns, nil, false},
		{"refusal", func(f fake.Format) []fake.Reply {
			return []fake.Reply{csv(f), {Text: []string{"I will not continue."}, StopReason: llm.StopRefusal}}
		}, nil, agent.StopRefusal, nil, false},
		{"provider error", func(f fake.Format) []fake.Reply {
			return []fake.Reply{csv(f), {Fail: &fake.Failure{Status: 400, Message: "bad request"}}}
		}, nil, agent.StopError, func(err error) bool {
			var ae *agent.Error
			return errors.As(err, &ae) && ae.Code == agent.CodeProviderBadRequest
		}, false},
		{"cancelled", func(f fake.Format) []fake.Reply {
			return []fake.Reply{csv(f), {Text: []string{"thinking"}, Hold: true}}
		}, nil, agent.StopCancelled, func(err error) bool { return errors.Is(err, context.Canceled) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range artifactFormats {
				t.Run(string(f), func(t *testing.T) {
					srv := fake.New(t)
					a, _ := fakeAgent(t, srv, f, nil)
					srv.Script(tc.script(f)...)
					rec := newRecorder()
					ctx, cancel := context.WithCancel(testCtx(t))
					defer cancel()
					emit := rec.emit
					if tc.cancel {
						emit = func(c context.Context, typ string, p any) error {
							err := rec.emit(c, typ, p)
							if typ == protocol.TypeArtifact {
								cancel()
							}
							return err
						}
					}
					res, err := a.Run(ctx, turnOf(protocol.InputText, "go", tc.over), emit)
					if tc.errIs == nil && err != nil || tc.errIs != nil && !tc.errIs(err) {
						t.Fatalf("err %v", err)
					}
					if res.StopReason != tc.stop {
						t.Fatalf("stop %s, want %s", res.StopReason, tc.stop)
					}
					if pathsOf(res.Artifacts) != "out/sales.csv" || len(artifactEvents(rec)) != 1 {
						t.Fatalf("artifacts %s, events %d", pathsOf(res.Artifacts), len(artifactEvents(rec)))
					}
					// The history keeps it on the write's message too.
					if h := a.History(); len(h) < 2 || pathsOf(h[1].Artifacts) != "out/sales.csv" {
						t.Fatalf("history artifacts %s", historyArtifacts(h))
					}
				})
			}
		})
	}
}

func TestCompactionKeepsArtifacts(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	var dropped []llm.Message
	a, dir := fakeAgent(t, srv, fake.Anthropic, func(c *agent.Config) {
		c.OnCompact = func(d []llm.Message) { dropped = append(dropped, d...) }
	})
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte("# Sales\n\nTotal: TBD\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Script(csvAndReport(fake.Anthropic)...)
	if _, err := a.Run(testCtx(t), textTurn("make the sales CSV and update the report"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	// A second turn with a Bash-made chart, kept verbatim by the compaction.
	srv.Script(
		reply(fake.ToolCall{ID: "toolu_chart", Name: "Bash", Input: map[string]any{"command": "printf 'x' > chart.svg", "artifact_paths": []string{"chart.svg"}}}),
		fake.Reply{Text: []string{"Made the chart."}},
	)
	if _, err := a.Run(testCtx(t), textTurn("and a chart"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	before := historyArtifacts(a.History())
	if before != "out/sales.csv,report.md,chart.svg" {
		t.Fatalf("before compaction %s", before)
	}
	srv.Script(fake.Reply{Text: []string{"Earlier: wrote out/sales.csv and edited report.md."}})
	ratio := 0.5
	if _, err := a.Compact(testCtx(t), &protocol.SessionCompact{TargetTokenRatio: &ratio}); err != nil {
		t.Fatal(err)
	}
	h := a.History()
	if got := historyArtifacts(h); got != before {
		t.Fatalf("after compaction %s, want %s", got, before)
	}
	// The summary (a message without tool use) carries the summarised
	// turn's artifacts; the kept turn keeps its own on its message.
	if !strings.HasPrefix(h[0].Content[0].Text, "Summary of the earlier conversation") || pathsOf(h[0].Artifacts) != "out/sales.csv,report.md" {
		t.Fatalf("summary %+v", h[0])
	}
	// OnCompact still sees the dropped messages, artifacts and all.
	if got := historyArtifacts(dropped); got != "out/sales.csv,report.md" {
		t.Fatalf("OnCompact got %s", got)
	}
	// A second compaction rewrites the summary message itself: its
	// artifacts survive that too (spec §10's last item).
	srv.Script(fake.Reply{Text: []string{"Everything so far: CSV, report, chart."}})
	// No ratio: a history this short is compacted to the smallest summary
	// that fits (a ratio near 0 would be refused, unreachable).
	if _, err := a.Compact(testCtx(t), nil); err != nil {
		t.Fatal(err)
	}
	if got := historyArtifacts(a.History()); got != before {
		t.Fatalf("after the second compaction %s", got)
	}
	// The next model call does not see them.
	srv.Script(fake.Reply{Text: []string{"ok"}})
	if _, err := a.Run(testCtx(t), textTurn("thanks"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	reqs := srv.ModelRequests()
	if strings.Contains(agenttest.MessagesJSON(reqs[len(reqs)-1]), `"artifacts"`) {
		t.Fatal("artifacts sent to the model after compaction")
	}
}

func TestSlashCompactKeepsArtifacts(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	a, _ := fakeAgent(t, srv, fake.Anthropic, nil)
	srv.Script(reply(fake.ToolCall{Name: "Write", Input: map[string]any{"file_path": "a.csv", "content": "a,b\n1,2\n"}}), fake.Reply{Text: []string{"done"}})
	if _, err := a.Run(testCtx(t), textTurn("write"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	srv.Script(fake.Reply{Text: []string{"Wrote a.csv."}})
	res, err := a.Run(testCtx(t), turnOf(protocol.InputSlashCommand, "/compact", nil), newRecorder().emit)
	if err != nil || res.StopReason != agent.StopEndTurn {
		t.Fatalf("%+v %v", res, err)
	}
	// The command made no file: its result's list is empty (not nil for a
	// caller ranging over it), and the history still has the earlier one.
	if res.Artifacts == nil || len(res.Artifacts) != 0 || historyArtifacts(a.History()) != "a.csv" {
		t.Fatalf("result %+v history %s", res.Artifacts, historyArtifacts(a.History()))
	}
}

func historyArtifacts(h []llm.Message) string {
	var ps []string
	for _, m := range h {
		for _, x := range m.Artifacts {
			ps = append(ps, x.Path())
		}
	}
	return strings.Join(ps, ",")
}

// TestArtifactFlagIsNotPartOfPermission: the rules decide on the tool and
// the path; artifact true or false changes nothing about what runs.
func TestArtifactFlagIsNotPartOfPermission(t *testing.T) {
	t.Parallel()
	calls := func(flag any) []fake.Reply {
		in := func(p string) map[string]any {
			m := map[string]any{"file_path": p, "content": "x"}
			if flag != nil {
				m["artifact"] = flag
			}
			return m
		}
		return []fake.Reply{
			reply(fake.ToolCall{Name: "Write", Input: in("reports/ok.txt")}),
			reply(fake.ToolCall{Name: "Write", Input: in("elsewhere.txt")}),
			reply(fake.ToolCall{Name: "Write", Input: in("reports/secret/no.txt")}),
			{Text: []string{"done"}},
		}
	}
	rules := func() *permission.Rules {
		return &permission.Rules{
			Allow: []permission.Rule{{Tool: "Write", Pattern: "reports/**"}},
			Deny:  []permission.Rule{{Tool: "Write", Pattern: "reports/secret/**"}},
		}
	}
	var statuses []string
	for _, on := range []bool{false, true} {
		for _, flag := range []any{nil, true, false, "true"} {
			if !on && flag != nil {
				continue
			}
			srv := fake.New(t)
			a, dir := fakeAgent(t, srv, fake.Anthropic, func(c *agent.Config) { c.Artifacts = on; c.Rules = rules() })
			srv.Script(calls(flag)...)
			rec := newRecorder()
			res, err := a.Run(testCtx(t), textTurn("write"), rec.emit)
			if err != nil {
				t.Fatal(err)
			}
			var st []string
			for _, f := range rec.finished() {
				st = append(st, f.Status)
			}
			statuses = append(statuses, strings.Join(st, ","))
			if _, err := os.Stat(filepath.Join(dir, "reports", "ok.txt")); err != nil {
				t.Fatalf("on %v flag %v: allowed write missing", on, flag)
			}
			wantArts := ""
			if on && flag != false {
				wantArts = "reports/ok.txt"
			}
			if pathsOf(res.Artifacts) != wantArts {
				t.Fatalf("on %v flag %v: artifacts %s", on, flag, pathsOf(res.Artifacts))
			}
		}
	}
	for _, s := range statuses {
		if s != "ok,denied,denied" {
			t.Fatalf("decisions differ with the flag: %v", statuses)
		}
	}
}
