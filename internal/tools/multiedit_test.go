package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func multiIn(path string, edits ...[2]string) map[string]any {
	var es []map[string]any
	for _, e := range edits {
		es = append(es, map[string]any{"old_string": e[0], "new_string": e[1]})
	}
	return map[string]any{"file_path": path, "edits": es}
}

func TestMultiEditAppliesInOrderAsOneChange(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	var sb strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	p := wtFile(t, dir, "f.txt", []byte(sb.String()))
	wtMarkRead(t, env, "f.txt")
	hist := &wtHistory{}
	env.History = hist
	var asked []Approval
	env.Approve = func(_ context.Context, a Approval) error {
		asked = append(asked, a)
		return nil
	}
	// The second edit matches text next to what the first one wrote:
	// adjacent is fine, and it sees the first one's result.
	res := wtOK(t, MultiEdit{}, env, multiIn("f.txt",
		[2]string{"line 3\n", "three\n"},
		[2]string{"line 4\n", "four\nFOUR\n"},
		[2]string{"line 25\n", ""},
	))
	want := strings.NewReplacer("line 3\n", "three\n", "line 4\n", "four\nFOUR\n", "line 25\n", "").Replace(sb.String())
	if got := wtContent(t, p); got != want {
		t.Fatalf("content %q", got)
	}
	if len(asked) != 1 || asked[0].Tool != "MultiEdit" || asked[0].Diff == nil {
		t.Fatalf("approvals %+v", asked)
	}
	if len(hist.calls) != 1 || string(hist.calls[0].old) != sb.String() {
		t.Fatalf("history %+v", hist.calls)
	}
	if !res.Changed || res.Path != p || res.Rel != "f.txt" || res.Diff != asked[0].Diff {
		t.Fatalf("result %+v", res)
	}
	if len(res.Diff.Hunks) != 2 || res.Diff.Hunks[0].OldStart != 1 {
		t.Fatalf("diff %+v", res.Diff.Hunks)
	}
	text := wtText(res)
	for _, s := range []string{"applied 3 edits (3 replacements)", "edits[0]: 1 replacement at line 3", "edits[1]: 1 replacement at line 4", "edits[2]: 1 replacement at line 26"} {
		if !strings.Contains(text, s) {
			t.Fatalf("text lacks %q:\n%s", s, text)
		}
	}
	// The written version counts as read: another MultiEdit needs no Read.
	wtOK(t, MultiEdit{}, env, multiIn("f.txt", [2]string{"FOUR", "4"}))
}

func TestMultiEditAllOrNone(t *testing.T) {
	t.Parallel()
	const orig = "alpha\nbeta\ngamma\nbeta\n"
	for _, c := range []struct {
		name  string
		edits [][2]string
		code  int
		at    string
	}{
		{"second not found", [][2]string{{"alpha", "A"}, {"delta", "D"}}, CodeNoMatch, "edits[1] (edit 2 of 2)"},
		{"third ambiguous", [][2]string{{"alpha", "A"}, {"gamma", "G"}, {"beta", "B"}}, CodeAmbiguous, "edits[2] (edit 3 of 3)"},
		{"first no change", [][2]string{{"alpha", "alpha"}, {"gamma", "G"}}, CodeNoChange, "edits[0]"},
		{"matches what edit 1 inserted", [][2]string{{"alpha", "alpha omega"}, {"omega", "O"}}, CodeOverlap, "edits[0] wrote"},
		{"text edit 1 replaced", [][2]string{{"alpha\nbeta", "AB"}, {"beta\ngamma", "BG"}}, CodeOverlap, "edits[0] already changed"},
		{"across a deletion", [][2]string{{"beta\ngamma\n", ""}, {"alpha\nbeta", "AB"}}, CodeOverlap, "edits[0] wrote"},
		{"replace_all reaching inserted text", [][2]string{{"alpha", "gamma"}}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env, dir := wtEnv(t)
			p := wtFile(t, dir, "f.txt", []byte(orig))
			wtMarkRead(t, env, "f.txt")
			hist := &wtHistory{}
			env.History = hist
			in := multiIn("f.txt", c.edits...)
			if c.code == 0 {
				// gamma written by edit 1, then every gamma replaced.
				in["edits"] = append(in["edits"].([]map[string]any), map[string]any{"old_string": "gamma", "new_string": "G", "replace_all": true})
				c.code, c.at = CodeOverlap, "edits[1] (edit 2 of 2)"
			}
			msg := wtCode(t, MultiEdit{}, env, in, c.code)
			if !strings.Contains(msg, c.at) || !strings.Contains(msg, "No edit was applied") {
				t.Fatalf("message %q lacks %q", msg, c.at)
			}
			if wtContent(t, p) != orig || len(hist.calls) != 0 {
				t.Fatalf("changed: %q, history %d", wtContent(t, p), len(hist.calls))
			}
		})
	}
}

func TestMultiEditContractAndInput(t *testing.T) {
	t.Parallel()
	t.Run("never read", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtCode(t, MultiEdit{}, env, multiIn("f.txt", [2]string{"a", "x"}), CodeNotRead)
		if wtContent(t, p) != "abc\n" {
			t.Fatal("changed")
		}
	})
	t.Run("stale", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtMarkRead(t, env, "f.txt")
		wtFile(t, dir, "f.txt", []byte("abcd\n"))
		wtCode(t, MultiEdit{}, env, multiIn("f.txt", [2]string{"a", "x"}), CodeStale)
		if wtContent(t, p) != "abcd\n" {
			t.Fatal("changed")
		}
	})
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("abc\n"))
	wtMarkRead(t, env, "f.txt")
	many := make([][2]string, maxMultiEdits+1)
	for i := range many {
		many[i] = [2]string{"a", "b"}
	}
	for name, in := range map[string]map[string]any{
		"no edits":            {"file_path": "f.txt", "edits": []any{}},
		"edits missing":       {"file_path": "f.txt"},
		"no path":             {"edits": []any{map[string]any{"old_string": "a", "new_string": "b"}}},
		"old_string missing":  {"file_path": "f.txt", "edits": []any{map[string]any{"new_string": "b"}}},
		"new_string missing":  {"file_path": "f.txt", "edits": []any{map[string]any{"old_string": "a"}}},
		"unknown edit field":  {"file_path": "f.txt", "edits": []any{map[string]any{"old_string": "a", "new_string": "b", "regex": true}}},
		"later empty old":     multiIn("f.txt", [2]string{"a", "b"}, [2]string{"", "c"}),
		"edits not an array":  {"file_path": "f.txt", "edits": "a->b"},
		"over the edit bound": multiIn("f.txt", many...),
	} {
		t.Run(name, func(t *testing.T) {
			wtCode(t, MultiEdit{}, env, in, CodeInvalidInput)
		})
	}
	if wtContent(t, p) != "abc\n" {
		t.Fatal("changed")
	}
}

func TestMultiEditCreatesAndKeepsTheFilesForm(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	res := wtOK(t, MultiEdit{}, env, multiIn("new.go", [2]string{"", "package a   \n\nfunc F() {}\n"}, [2]string{"F()", "G()"}))
	if got := wtContent(t, dir+"/new.go"); got != "package a\n\nfunc G() {}\n" || !res.Diff.IsNewFile {
		t.Fatalf("created %q %+v", got, res.Diff)
	}
	wtCode(t, MultiEdit{}, env, multiIn("missing.txt", [2]string{"a", "b"}), CodeNotFound)
	full := wtFile(t, dir, "full.txt", []byte("x\n"))
	wtMarkRead(t, env, "full.txt")
	wtCode(t, MultiEdit{}, env, multiIn("full.txt", [2]string{"", "y"}), CodeExists)
	if wtContent(t, full) != "x\n" {
		t.Fatal("a refused fill changed the file")
	}

	// CRLF stays CRLF; curly quotes match as Edit matches them, keeping
	// the file's style.
	p := wtFile(t, dir, "crlf.txt", []byte("say \u201chi\u201d\r\nbye\r\n"))
	wtMarkRead(t, env, "crlf.txt")
	res = wtOK(t, MultiEdit{}, env, multiIn("crlf.txt", [2]string{`say "hi"`, `say "hello"`}, [2]string{"bye\n", "bye\nend\n"}))
	if got := wtContent(t, p); got != "say \u201chello\u201d\r\nbye\r\nend\r\n" {
		t.Fatalf("content %q", got)
	}
	if !strings.Contains(wtText(res), "curly quotes") {
		t.Fatalf("no quote note: %s", wtText(res))
	}
}

// FuzzMultiEditInput feeds MultiEdit arbitrary input objects against one
// file: a call either applies, or fails with a coded error (never an
// internal one) and leaves the file as it was.
func FuzzMultiEditInput(f *testing.F) {
	for _, seed := range []string{
		`{"file_path":"f.txt","edits":[{"old_string":"b","new_string":"B"}]}`,
		`{"file_path":"f.txt","edits":[{"old_string":"a","new_string":"ab"},{"old_string":"b","new_string":"c","replace_all":true}]}`,
		`{"file_path":"f.txt","edits":[{"old_string":"a\nb","new_string":"x"},{"old_string":"b\nc","new_string":"y"}]}`,
		`{"file_path":"f.txt","edits":[{"old_string":"","new_string":"x"}]}`,
		`{"file_path":"f.txt","edits":[{"old_string":"c","new_string":""},{"old_string":"b\nd","new_string":"z"}]}`,
		`{"file_path":"f.txt","edits":[{"old_string":"\u201ca\u201d","new_string":"q"}]}`,
		`{"file_path":"f.txt","edits":null}`,
		`{"file_path":"f.txt","edits":[null]}`,
		`{"file_path":"f.txt","edits":[{"old_string":"a","new_string":"b"}],"x":1}`,
		`[]`, `{`, `{"file_path":"../f.txt","edits":[{"old_string":"a","new_string":"b"}]}`,
	} {
		f.Add(seed)
	}
	const orig = "a\nb\nc\nd\n\"a\" b\n"
	f.Fuzz(func(t *testing.T, in string) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte(orig))
		wtMarkRead(t, env, "f.txt")
		res, err := MultiEdit{}.Run(context.Background(), env, json.RawMessage(in))
		if err != nil {
			if CodeOf(err) == CodeInternal {
				t.Fatalf("internal error for %q: %v", in, err)
			}
			if got := wtContent(t, p); got != orig {
				t.Fatalf("failed call %q changed the file to %q: %v", in, got, err)
			}
			return
		}
		if res.Path == "" || !res.Changed || res.Diff == nil {
			t.Fatalf("result %+v for %q", res, in)
		}
		// A MultiEdit that applied is the same as its edits made one
		// Edit after another (an Edit that changes nothing by itself is
		// code 11, a no-op in the sequence).
		var p2 multiEditParams
		if err := json.Unmarshal([]byte(in), &p2); err != nil {
			t.Fatalf("applied input %q does not decode: %v", in, err)
		}
		if *p2.FilePath != "f.txt" {
			return // another file (created), or f.txt by another name
		}
		env2, dir2 := wtEnv(t)
		q := wtFile(t, dir2, "f.txt", []byte(orig))
		wtMarkRead(t, env2, "f.txt")
		for i, e := range p2.Edits {
			one := map[string]any{"file_path": "f.txt", "old_string": *e.OldString, "new_string": *e.NewString, "replace_all": e.ReplaceAll}
			if _, err := wtRun(t, Edit{}, env2, one); err != nil && CodeOf(err) != CodeNoChange {
				t.Fatalf("MultiEdit %q applied, but Edit %d alone fails: %v", in, i, err)
			}
		}
		if a, b := wtContent(t, p), wtContent(t, q); a != b {
			t.Fatalf("MultiEdit %q gave %q, one Edit after another %q", in, a, b)
		}
	})
}
