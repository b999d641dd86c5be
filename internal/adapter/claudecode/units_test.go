package claudecode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

func TestStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := newStore(dir)
	if _, ok, err := st.load("s1"); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	r := record{FerrySessionID: "s1", ClaudeSessionID: "c1", Workspace: "/ws"}
	if err := st.save(r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := newStore(dir).load("s1")
	if err != nil || !ok || got.ClaudeSessionID != "c1" || got.Workspace != "/ws" {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
	// No temp files are left behind, and the file is private.
	entries, _ := os.ReadDir(filepath.Join(dir, "sessions"))
	if len(entries) != 1 || entries[0].Name() != "s1.json" {
		t.Errorf("entries %v", entries)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sessions", "s1.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v", fi.Mode(), err)
	}
	// An id that is no plain file name is hashed, never used as a path.
	odd := "../../etc/passwd"
	if err := st.save(record{FerrySessionID: odd, ClaudeSessionID: "c2"}); err != nil {
		t.Fatal(err)
	}
	if p := st.path(odd); filepath.Dir(p) != filepath.Join(dir, "sessions") || strings.Contains(filepath.Base(p), "passwd") {
		t.Errorf("path %s", p)
	}
	if got, ok, _ := st.load(odd); !ok || got.ClaudeSessionID != "c2" {
		t.Errorf("%+v", got)
	}
	// A record of another version, or another session, is not used.
	b, _ := json.Marshal(record{Version: 99, FerrySessionID: "s1", ClaudeSessionID: "c9"})
	if err := os.WriteFile(st.path("s1"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.load("s1"); ok || err != nil {
		t.Errorf("a record of another version was used (%v)", err)
	}
	if err := os.WriteFile(st.path("s1"), []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.load("s1"); ok || err == nil {
		t.Error("a broken record was used")
	}
	if err := st.remove("s1"); err != nil {
		t.Fatal(err)
	}
	if err := st.remove("s1"); err != nil {
		t.Errorf("removing twice: %v", err)
	}
	// In memory.
	mem := newStore("")
	if err := mem.save(r); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := mem.load("s1"); !ok || got.ClaudeSessionID != "c1" {
		t.Errorf("%+v", got)
	}
}

func validDiff(t *testing.T, d *protocol.FileDiff) {
	t.Helper()
	fin := &protocol.ToolFinished{TurnID: "t", ToolUseID: "u", ToolName: "Edit", Status: protocol.ToolOK, Diff: d}
	m := protocol.New(protocol.TypeToolFinished, fin)
	m.SessionID = "s"
	data, err := protocol.Encode(m)
	if err == nil {
		_, err = protocol.DecodeFrom(protocol.RoleClient, data)
	}
	if err != nil {
		t.Errorf("invalid diff: %v", err)
	}
}

func TestPatchDiff(t *testing.T) {
	t.Parallel()
	d := patchDiff("a.txt", []patchHunk{{OldStart: 1, OldLines: 9, NewStart: 1, NewLines: 9, // wrong counts are recounted
		Lines: []string{" ctx", "-old", "+new", "+more", `\ No newline at end of file`, ""}}}, false)
	validDiff(t, d)
	h := d.Hunks[0]
	if h.OldLines != 2 || h.NewLines != 3 || len(h.Lines) != 4 || d.Truncated {
		t.Errorf("%+v", d)
	}
	// Caps.
	var lines []string
	for range maxDiffLines + 10 {
		lines = append(lines, "+"+strings.Repeat("y", 10))
	}
	big := patchDiff("b.txt", []patchHunk{{OldStart: 0, NewStart: 1, Lines: lines}, {OldStart: 5, NewStart: 5, Lines: []string{"-z"}}}, true)
	validDiff(t, big)
	if !big.Truncated || len(big.Hunks) != 1 || len(big.Hunks[0].Lines) != maxDiffLines || !big.IsNewFile {
		t.Errorf("truncated %v, %d hunks", big.Truncated, len(big.Hunks))
	}
	long := patchDiff("c.txt", []patchHunk{{OldStart: 1, NewStart: 1, Lines: []string{"+" + strings.Repeat("é", maxDiffLineSize)}}}, false)
	validDiff(t, long)
	if !long.Truncated || len(long.Hunks[0].Lines[0].Text) > maxDiffLineSize+4 {
		t.Errorf("long line %d", len(long.Hunks[0].Lines[0].Text))
	}
}

func TestSessionScoped(t *testing.T) {
	t.Parallel()
	in := []json.RawMessage{
		json.RawMessage(`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make:*"}],"behavior":"allow","destination":"localSettings"}`),
		json.RawMessage(`{"type":"setMode","mode":"bypassPermissions","destination":"session"}`),
		json.RawMessage(`{"type":"setMode","mode":"acceptEdits","destination":"userSettings"}`),
		json.RawMessage(`{"type":"removeRules"}`),
		json.RawMessage(`not json`),
	}
	out := sessionScoped(in)
	if len(out) != 2 {
		t.Fatalf("%s", out)
	}
	for _, o := range out {
		if !strings.Contains(string(o), `"destination":"session"`) || strings.Contains(string(o), "bypass") {
			t.Errorf("%s", o)
		}
	}
	if d := describeSuggestions(out); !strings.Contains(d, "Bash(make:*)") || !strings.Contains(d, "accept all file edits") {
		t.Errorf("%q", d)
	}
}

func TestQuestions(t *testing.T) {
	t.Parallel()
	var q question
	if err := json.Unmarshal([]byte(`{"question":"Pick","multiSelect":true,"options":[{"label":"A"},{"label":"B"},{"label":"C"}]}`), &q); err != nil {
		t.Fatal(err)
	}
	ir := questionRequest("t", &controlRequest{ToolUseID: "u"}, []question{q, q}, 1)
	if ir.Kind != protocol.InteractionMultiSelect || len(ir.Options) != 3 || ir.Options[2].Value != "C" || !strings.Contains(ir.Message, "2 of 2") {
		t.Errorf("%+v", ir)
	}
	if got := answerText(q, &protocol.InteractionResponse{SelectedValue: protocol.Multiple("C", "A")}); got != "C, A" {
		t.Errorf("%q", got)
	}
	// Repeated labels cannot be values: the options are numbered.
	var dup question
	_ = json.Unmarshal([]byte(`{"question":"Pick","options":[{"label":"same"},{"label":"same"}]}`), &dup)
	if vals := optionValues(dup); vals[0] != "option_1" || vals[1] != "option_2" {
		t.Errorf("%q", vals)
	}
	if got := answerText(dup, &protocol.InteractionResponse{SelectedValue: protocol.Single("option_2")}); got != "same" {
		t.Errorf("%q", got)
	}
	// A question without options is text input.
	free := question{Question: "Name?"}
	if ir := questionRequest("t", &controlRequest{}, []question{free}, 0); ir.Kind != protocol.InteractionTextInput || len(ir.Options) != 0 {
		t.Errorf("%+v", ir)
	}
	if got := answerText(free, &protocol.InteractionResponse{TextInput: "Ada"}); got != "Ada" {
		t.Errorf("%q", got)
	}
}

func TestEventInput(t *testing.T) {
	t.Parallel()
	if got := eventInput(json.RawMessage(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Errorf("%s", got)
	}
	for _, bad := range []string{``, `[1]`, `"s"`, `{"a":`} {
		if got := eventInput(json.RawMessage(bad)); got != nil {
			t.Errorf("%q → %s", bad, got)
		}
	}
	big, _ := json.Marshal(map[string]any{"file_path": "x", "content": strings.Repeat("z", 10<<20)})
	got := eventInput(big)
	if len(got) > maxEventInput || !json.Valid(got) || !strings.Contains(string(got), "bytes in all") || !strings.Contains(string(got), `"file_path":"x"`) {
		t.Errorf("%d bytes: %.200s", len(got), got)
	}
	if got := eventInput(json.RawMessage("{\"a\":\"\xff\"}")); !json.Valid(got) || strings.Contains(string(got), "\xff") {
		t.Errorf("%q", got)
	}
}

func TestFlags(t *testing.T) {
	t.Parallel()
	two := 2
	req := &protocol.PromptRequest{ConfigOverrides: &protocol.ConfigOverrides{MaxTurns: &two,
		AllowedTools: []string{" Read ", "", "Bad\nRule"}, DeniedTools: []string{"Bash(rm:*)"},
		JSONSchema: json.RawMessage("{\n \"type\" : \"object\"\n}")}}
	f := flagsOf(req)
	want := []string{"--max-turns", "2", "--allowedTools=Read", "--disallowedTools=Bash(rm:*)", `--json-schema={"type":"object"}`}
	if strings.Join(f.args(), " ") != strings.Join(want, " ") {
		t.Errorf("%q", f.args())
	}
	if flagsOf(nil).key() != "" || flagsOf(&protocol.PromptRequest{}).key() != "" || f.key() == "" {
		t.Error("keys")
	}
}

func TestRel(t *testing.T) {
	t.Parallel()
	s := &session{ws: "/work/ws"}
	for in, want := range map[string]string{
		"/work/ws/a/b.txt": "a/b.txt",
		"/work/ws":         ".",
		"/work/other.txt":  "/work/other.txt",
		"/work/ws2/x":      "/work/ws2/x",
		"rel/./x":          "rel/x",
	} {
		if got := s.rel(in); got != want {
			t.Errorf("rel(%q) = %q, want %q", in, got, want)
		}
	}
	c := s.callFor("Bash", json.RawMessage(`{"command":"git status"}`))
	if c.Command != "git status" || c.ReadOnly || c.Dir != "/work/ws" {
		t.Errorf("%+v", c)
	}
	if c := s.callFor("Read", json.RawMessage(`{"file_path":"/work/ws/a"}`)); c.Path != "a" || !c.ReadOnly {
		t.Errorf("%+v", c)
	}
	if c := s.callFor("mcp__x__write", json.RawMessage(`{}`)); c.ReadOnly {
		t.Errorf("an MCP tool counted as read-only")
	}
	// Claude Code's WebFetch meets ferry's per-domain rules.
	if c := s.callFor("WebFetch", json.RawMessage(`{"url":"https://Docs.Example.COM./x","prompt":"?"}`)); c.Domain != "docs.example.com" || !c.ReadOnly {
		t.Errorf("WebFetch: %+v", c)
	}
}

func TestModeRefusals(t *testing.T) {
	t.Parallel()
	s := &session{mode: protocol.ModeReview, ws: t.TempDir()} // Bash runs in ws: review mode reads git config there
	if ok, _ := s.modeAllows(s.callFor("Bash", json.RawMessage(`{"command":"git log -3"}`))); !ok {
		t.Error("review mode refused a read-only git command")
	}
	if ok, why := s.modeAllows(s.callFor("Bash", json.RawMessage(`{"command":"git commit -m x"}`))); ok || !strings.Contains(why, "review mode") {
		t.Errorf("review mode allowed git commit (%q)", why)
	}
	s.mode = protocol.ModePlan
	if ok, why := s.modeAllows(s.callFor("ExitPlanMode", json.RawMessage(`{"plan":"x"}`))); ok || !strings.Contains(why, "only the user switches modes") {
		t.Errorf("%v %q", ok, why)
	}
	for _, tool := range []string{"Write", "Edit", "NotebookEdit", "Bash", "WebFetchAndWrite"} {
		if ok, _ := s.modeAllows(s.callFor(tool, json.RawMessage(`{}`))); ok {
			t.Errorf("plan mode allowed %s", tool)
		}
	}
	for _, tool := range []string{"Read", "Grep", "Glob", "AskUserQuestion", "StructuredOutput"} {
		if ok, _ := s.modeAllows(s.callFor(tool, json.RawMessage(`{}`))); !ok {
			t.Errorf("plan mode refused %s", tool)
		}
	}
}

func TestProposedDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fsys, err := vfs.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	s := &session{ws: dir, fs: fsys}
	in := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

	d := s.proposedDiff("Write", in(map[string]any{"file_path": filepath.Join(dir, "new.txt"), "content": "hello\n"}))
	if d == nil || !d.IsNewFile || d.Path != "new.txt" || len(d.Hunks) != 1 {
		t.Fatalf("write: %+v", d)
	}
	validDiff(t, d)
	d = s.proposedDiff("MultiEdit", in(map[string]any{"file_path": "a.txt", "edits": []any{
		map[string]any{"old_string": "one", "new_string": "1"}, map[string]any{"old_string": "three", "new_string": "3"}}}))
	if d == nil || d.IsNewFile || len(d.Hunks) == 0 {
		t.Fatalf("multiedit: %+v", d)
	}
	validDiff(t, d)
	for name, input := range map[string]json.RawMessage{
		"edit that does not apply": in(map[string]any{"file_path": "a.txt", "old_string": "four", "new_string": "4"}),
		"outside the workspace":    in(map[string]any{"file_path": "/etc/hostname", "old_string": "a", "new_string": "b"}),
		"no path":                  in(map[string]any{"old_string": "a"}),
	} {
		if d := s.proposedDiff("Edit", input); d != nil {
			t.Errorf("%s: %+v", name, d)
		}
	}
	if d := s.proposedDiff("Bash", in(map[string]any{"command": "ls"})); d != nil {
		t.Errorf("bash: %+v", d)
	}
}

// A prompt's denied_tools as ferry's hook applies them: ferry's rules by
// their patterns, any tool by its bare name.
func TestPromptDeny(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	d := denyOf([]string{"Bash(rm:*)", "Edit(secrets/**)", "WebFetch", "Frob(x"}, ws)
	for _, tc := range []struct {
		c    permission.Call
		want bool
	}{
		{permission.Call{Tool: "Bash", Command: "rm -rf x", Dir: ws}, true},
		{permission.Call{Tool: "Bash", Command: "ls", Dir: ws}, false},
		{permission.Call{Tool: "Edit", Path: "secrets/key"}, true},
		{permission.Call{Tool: "Write", Path: "secrets/key"}, true}, // Edit rules cover writes
		{permission.Call{Tool: "Edit", Path: "main.go"}, false},
		{permission.Call{Tool: "WebFetch"}, true},
		{permission.Call{Tool: "Read", Path: "secrets/key", ReadOnly: true}, false},
	} {
		if got := d.denies(tc.c); got != tc.want {
			t.Errorf("%+v: denies = %v, want %v", tc.c, got, tc.want)
		}
	}
	if denyOf(nil, ws).denies(permission.Call{Tool: "Bash", Command: "rm x"}) {
		t.Error("no rules denied a call")
	}
}
