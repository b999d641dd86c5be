package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/agentspec"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// toolProperties returns, per tool the request offers, the names of its
// input schema's properties (either wire format).
func toolProperties(r fake.Request) map[string][]string {
	out := map[string][]string{}
	list, _ := r.Body["tools"].([]any)
	for _, t := range list {
		tm, _ := t.(map[string]any)
		schema, _ := tm["input_schema"].(map[string]any)
		if fn, ok := tm["function"].(map[string]any); ok {
			tm = fn
			schema, _ = fn["parameters"].(map[string]any)
		}
		name, _ := tm["name"].(string)
		props, _ := schema["properties"].(map[string]any)
		var names []string
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		out[name] = names
	}
	return out
}

// csvAndReportScript: write a CSV, read and edit a report, answer.
func csvAndReportScript() []fake.Reply {
	return []fake.Reply{
		{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "out/sales.csv", "content": "region,sales\nnorth,10\nsouth,20\n"}}}},
		{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "report.md"}}}},
		{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "report.md", "old_string": "TBD", "new_string": "30"}}}},
		{Text: []string{"Done: out/sales.csv and report.md."}},
	}
}

type jsonArtifact struct {
	Path      string `json:"path"`
	FileName  string `json:"file_name"`
	Size      int64  `json:"size"`
	MimeType  string `json:"mime_type"`
	ToolUseID string `json:"tool_use_id"`
}

func TestRunArtifactsJSON(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		writeFile(t, filepath.Join(dir, "report.md"), "# Sales\n\nTotal: TBD\n")
		srv.Script(csvAndReportScript()...)
		out := ferryRun(t, srv, f, dir, "", "--artifacts", "--output-format", "json", "--allow", "Write", "--allow", "Edit", "make the CSV, update the report")
		if out.code != ExitOK {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		var res struct {
			IsError   bool            `json:"is_error"`
			Artifacts *[]jsonArtifact `json:"artifacts"`
		}
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, out.stdout)
		}
		if res.Artifacts == nil || len(*res.Artifacts) != 2 {
			t.Fatalf("artifacts in %s", out.stdout)
		}
		arts := *res.Artifacts
		if a := arts[0]; a.Path != "out/sales.csv" || a.FileName != "sales.csv" || a.Size != 31 || a.MimeType != "text/csv" || a.ToolUseID == "" {
			t.Fatalf("csv %+v", a)
		}
		if a := arts[1]; a.Path != "report.md" || a.FileName != "report.md" || a.Size != int64(len("# Sales\n\nTotal: 30\n")) || !strings.HasPrefix(a.MimeType, "text/markdown") {
			t.Fatalf("report %+v", a)
		}
		// With --artifacts the model is offered the parameters, and is
		// never sent the artifacts themselves.
		reqs := srv.ModelRequests()
		props := toolProperties(reqs[0])
		if !slices.Contains(props["Write"], "artifact") || !slices.Contains(props["Edit"], "artifact") || !slices.Contains(props["Bash"], "artifact_paths") ||
			slices.Contains(props["Read"], "artifact") {
			t.Fatalf("tool properties %v", props)
		}
		for _, r := range reqs {
			if strings.Contains(agenttest.MessagesJSON(r), `"artifacts"`) {
				t.Fatal("artifacts sent to the model")
			}
		}
	})
}

func TestRunWithoutArtifacts(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		writeFile(t, filepath.Join(dir, "report.md"), "# Sales\n\nTotal: TBD\n")
		srv.Script(csvAndReportScript()...)
		out := ferryRun(t, srv, f, dir, "", "--output-format", "json", "--allow", "Write", "--allow", "Edit", "make the CSV, update the report")
		if out.code != ExitOK {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
			t.Fatal(err)
		}
		if _, ok := res["artifacts"]; ok {
			t.Fatalf("artifacts listed without --artifacts: %s", out.stdout)
		}
		// The default: the parameter is absent from every tool schema the
		// model got, so it never sees it.
		for i, r := range srv.ModelRequests() {
			for tool, ps := range toolProperties(r) {
				if slices.Contains(ps, "artifact") || slices.Contains(ps, "artifact_paths") {
					t.Fatalf("request %d: %s offers %v", i, tool, ps)
				}
			}
			if strings.Contains(string(r.Raw), "artifact") {
				t.Fatalf("request %d mentions artifacts", i)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "report.md")); string(got) != "# Sales\n\nTotal: 30\n" {
			t.Fatalf("report %q", got)
		}
	})
}

func TestRunArtifactsStreamJSONAndText(t *testing.T) {
	t.Parallel()
	srv, dir := fake.New(t), t.TempDir()
	writeFile(t, filepath.Join(dir, "report.md"), "# Sales\n\nTotal: TBD\n")
	srv.Script(csvAndReportScript()...)
	out := ferryRun(t, srv, fake.Anthropic, dir, "", "--artifacts", "--output-format", "stream-json", "--allow", "Write", "--allow", "Edit", "go")
	if out.code != ExitOK {
		t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
	}
	var events []string
	var last map[string]any
	var paths []string
	sc := bufio.NewScanner(strings.NewReader(out.stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		events = append(events, line.Type)
		if line.Type == protocol.TypeArtifact {
			var a protocol.Artifact
			if err := json.Unmarshal(line.Payload, &a); err != nil || !strings.HasPrefix(a.ArtifactID, "art_") {
				t.Fatalf("%v %+v", err, a)
			}
			paths = append(paths, a.Path)
		}
		_ = json.Unmarshal(sc.Bytes(), &last)
	}
	if strings.Join(paths, ",") != "out/sales.csv,report.md" {
		t.Fatalf("agent.artifact events %v in %v", paths, events)
	}
	if arts, _ := last["artifacts"].([]any); last["type"] != "result" || len(arts) != 2 {
		t.Fatalf("last line %v", last)
	}

	// Text: the answer on stdout, the files on stderr.
	srv2, dir2 := fake.New(t), t.TempDir()
	writeFile(t, filepath.Join(dir2, "report.md"), "# Sales\n\nTotal: TBD\n")
	srv2.Script(csvAndReportScript()...)
	out = ferryRun(t, srv2, fake.Anthropic, dir2, "", "--artifacts", "--allow", "Write", "--allow", "Edit", "go")
	if out.code != ExitOK || out.stdout != "Done: out/sales.csv and report.md.\n" ||
		!strings.Contains(out.stderr, "artifact out/sales.csv (31 bytes, text/csv)") || !strings.Contains(out.stderr, "artifact report.md (") {
		t.Fatalf("exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
	}
}

func TestRunArtifactsOnFailure(t *testing.T) {
	t.Parallel()
	// A run that stops early still lists the files it made.
	srv, dir := fake.New(t), t.TempDir()
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "part.csv", "content": "a,b\n"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Glob", Input: map[string]any{"pattern": "*"}}}},
	)
	out := ferryRun(t, srv, fake.OpenAI, dir, "", "--artifacts", "--output-format", "json", "--max-turns", "2", "--allow", "Write", "go")
	if out.code != ExitError {
		t.Fatalf("exit %d", out.code)
	}
	var res struct {
		IsError   bool           `json:"is_error"`
		Error     map[string]any `json:"error"`
		Artifacts []jsonArtifact `json:"artifacts"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Error["code"] != "max_turns" || len(res.Artifacts) != 1 || res.Artifacts[0].Path != "part.csv" {
		t.Fatalf("%s", out.stdout)
	}
	// No files made: an empty list, still present.
	srv2 := fake.New(t)
	srv2.Script(fake.Reply{Text: []string{"nothing to do"}})
	out = ferryRun(t, srv2, fake.Anthropic, t.TempDir(), "", "--artifacts", "--output-format", "json", "hi")
	if out.code != ExitOK || !strings.Contains(out.stdout, `"artifacts":[]`) {
		t.Fatalf("%d %s", out.code, out.stdout)
	}
}

// TestRunArtifactsAnyAgent: --artifacts is no longer ferry's agent's own;
// an agent that wrote nothing gives an empty list, still present.
func TestRunArtifactsAnyAgent(t *testing.T) {
	t.Parallel()
	out := runAgent(t, t.TempDir(), "", "--agent", "echo", "--artifacts", "--output-format", "json", "hi")
	if out.code != ExitOK || !strings.Contains(out.stdout, `"artifacts":[]`) {
		t.Fatalf("%d %s %s", out.code, out.stdout, out.stderr)
	}
}

// TestLiveBuiltinHasArtifacts: the builtin agent a client (ferry connect,
// ferry up) offers is UI-driven, so its sessions hand files over.
func TestLiveBuiltinHasArtifacts(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	env := Env{Stderr: io.Discard, Getenv: func(k string) string {
		switch k {
		case "ANTHROPIC_API_KEY":
			return "test-key"
		case "ANTHROPIC_BASE_URL":
			return srv.BaseURL(fake.Anthropic)
		}
		return ""
	}}
	ads, err := liveAdapters(env, slog.New(slog.DiscardHandler), []agentspec.Spec{{Kind: agentspec.Builtin}}, t.TempDir(), "ferry up")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := ads[0].Open(ctx, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "printf 'a,b' > out.csv", "artifact_paths": []string{"out.csv"}}}}},
		fake.Reply{Text: []string{"done"}},
	)
	var got []*protocol.Artifact
	var mu sync.Mutex
	emit := func(_ context.Context, typ string, p any) error {
		if a, ok := p.(*protocol.Artifact); ok {
			mu.Lock()
			got = append(got, a)
			mu.Unlock()
		}
		// A permission request: allow it, as the user would in the UI.
		if ir, ok := p.(*protocol.InteractionRequest); ok {
			go func() {
				_ = sess.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(protocol.AllowOnce)})
			}()
		}
		return nil
	}
	res, err := sess.Run(ctx, runTurn("make out.csv", ""), emit)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Path != "out.csv" || len(res.Artifacts) != 1 {
		t.Fatalf("events %+v, result %+v", got, res.Artifacts)
	}
	if props := toolProperties(srv.ModelRequests()[0]); !slices.Contains(props["Write"], "artifact") {
		t.Fatalf("schema %v", props)
	}
}
