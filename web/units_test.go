package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// jsPart is a part of a parsed prompt as the JavaScript parser gives it.
type jsPart struct {
	Text    *string `json:"text,omitempty"`
	RefID   string  `json:"ref_id,omitempty"`
	Display string  `json:"display,omitempty"`
}

type vector struct {
	Text  string                   `json:"text"`
	Refs  []protocol.FileReference `json:"refs"`
	Parts []jsPart                 `json:"parts"`
}

// pieces are what random prompts are made of: the characters the token
// grammar and the escaping care about, and some text.
var pieces = []string{`\`, `\\`, `<`, `@`, `<@`, `<@file:`, `ref_0`, `ref_1`, `x`, `|`, `>`, ` `, `é`, `😀`, "\n",
	`<@file:ref_0|a.go>`, `<@file:ref_1|b/c.ts>`, `<@file:nope|d>`, `\<@file:ref_0|e>`, `<@user:x>`, `|path>`}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(12); n >= 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// vectors builds prompts and what protocol/fileref parses them into: random
// texts, and prompts composed from random segments as the master does.
func vectors() []vector {
	r := rand.New(rand.NewPCG(9, 9))
	refs := []protocol.FileReference{
		{RefID: "ref_0", Path: "a.go", Name: "a.go", WorkspaceRelativePath: "a.go"},
		{RefID: "ref_1", Path: "b/c.ts", Name: "c.ts", WorkspaceRelativePath: "b/c.ts"},
	}
	var texts []vector
	for range 600 {
		texts = append(texts, vector{Text: randomText(r), Refs: refs[:r.IntN(3)]})
	}
	for range 400 {
		var segs []protocol.PromptSegment
		for n := r.IntN(5); n >= 0; n-- {
			if r.IntN(3) == 0 {
				p := []string{"src/auth.ts", "a>b|c.go", "dir/\\file<@.md", "ü/ñ.txt"}[r.IntN(4)]
				segs = append(segs, protocol.PromptSegment{Kind: "file", File: &protocol.PickedFile{Path: p, DisplayPath: p}})
			} else {
				segs = append(segs, protocol.PromptSegment{Kind: "text", Text: randomText(r)})
			}
		}
		text, rs, err := fileref.Compose(segs)
		if err != nil || text == "" {
			continue
		}
		texts = append(texts, vector{Text: text, Refs: rs})
	}
	for i := range texts {
		for _, p := range fileref.Parse(texts[i].Text, texts[i].Refs).Parts {
			if p.IsFile() {
				texts[i].Parts = append(texts[i].Parts, jsPart{RefID: p.File.RefID, Display: p.DisplayPath})
			} else {
				t := p.Text
				texts[i].Parts = append(texts[i].Parts, jsPart{Text: &t})
			}
		}
	}
	return texts
}

// TestJSUnits runs the UI's pure modules under Node: the prompt parser
// (static/js/fileref.js) against protocol/fileref on a thousand prompts,
// the session state's resume rules (static/js/session.js), and the
// attachments' pure parts (static/js/attach.js: pre-checks, pasted names,
// context_files, upload answers and the retry of a busy one, the filter
// of inline tool images).
func TestJSUnits(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("FERRY_REQUIRE_BROWSER") != "" {
			t.Fatal("node is missing: apt-get install -y nodejs")
		}
		t.Skip("node is missing: apt-get install -y nodejs")
	}
	b, err := json.Marshal(vectors())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vectors.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	codes := filepath.Join(t.TempDir(), "codes.json")
	if b, err = json.Marshal(errorCodes(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(codes, b, 0o600); err != nil {
		t.Fatal(err)
	}
	titles := filepath.Join(t.TempDir(), "titles.json")
	if b, err = json.Marshal(titleVectors()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(titles, b, 0o600); err != nil {
		t.Fatal(err)
	}
	timeouts := filepath.Join(t.TempDir(), "timeouts.json")
	if b, err = json.Marshal(timeoutVectors(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(timeouts, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", "units.mjs"), path, codes, titles, timeouts)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
}

// codeSet is every error code the UI may have to show, from their sources:
// protocol errors, agent.error codes (the AgentCode constants) and the
// tools' numeric codes with their names in docs/tools.md's table.
type codeSet struct {
	Strings []string          `json:"strings"`
	Tools   map[string]string `json:"tools"`
}

// constStrings is the values of the string constants in file whose names
// start with prefix.
func constStrings(t *testing.T, file, prefix string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, prefix) || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						v = lit.Value // a number
					}
					out[n.Name] = v
				}
			}
		}
	}
	return out
}

func errorCodes(t *testing.T) codeSet {
	t.Helper()
	var cs codeSet
	for c := range protocol.ErrorCodes {
		cs.Strings = append(cs.Strings, c)
	}
	agent := constStrings(t, filepath.Join("..", "protocol", "agent.go"), "AgentCode")
	if len(agent) < 20 {
		t.Fatalf("found only %d AgentCode constants in protocol/agent.go", len(agent))
	}
	for _, v := range agent {
		cs.Strings = append(cs.Strings, v)
	}
	tools := constStrings(t, filepath.Join("..", "internal", "tools", "errors.go"), "Code")
	doc, err := os.ReadFile(filepath.Join("..", "docs", "tools.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| ([^|]+?) \|`).FindAllStringSubmatch(string(doc), -1) {
		names[m[1]] = m[2]
	}
	cs.Tools = map[string]string{}
	for k, n := range tools {
		if names[n] == "" {
			t.Fatalf("tool code %s (%s) has no row in docs/tools.md's table", n, k)
		}
		cs.Tools[n] = names[n]
	}
	if len(cs.Tools) < 20 {
		t.Fatalf("found only %d tool codes in internal/tools/errors.go", len(cs.Tools))
	}
	return cs
}

// timeoutVector is an interaction request the decoder accepts and the
// answer its timeout applies (protocol TimeoutAnswer; nil: none): what the
// question's card says before the deadline must be that answer.
type timeoutVector struct {
	Req    *protocol.InteractionRequest `json:"req"`
	Answer *struct {
		Values []string `json:"values"`
		Text   string   `json:"text"`
	} `json:"answer"`
}

// timeoutVectors are requests of every kind with defaults good and bad,
// those the decoder accepts, each with what its timeout answers.
func timeoutVectors(t *testing.T) []timeoutVector {
	r := rand.New(rand.NewPCG(7, 31))
	values := []string{protocol.AllowOnce, protocol.AllowAlways, protocol.Deny, "a", "b", "c"}
	defaults := []string{"", protocol.Deny, protocol.AllowOnce, "a", "b", "z", "a,b", " a , c ", "a,z", ",", "free text"}
	kinds := []string{protocol.InteractionPermission, protocol.InteractionSingleSelect, protocol.InteractionMultiSelect, protocol.InteractionTextInput}
	var out []timeoutVector
	for range 600 {
		req := &protocol.InteractionRequest{InteractionID: "i1", TurnID: "t1", Title: "Which?",
			Kind: kinds[r.IntN(len(kinds))], DefaultValue: defaults[r.IntN(len(defaults))]}
		if req.Kind != protocol.InteractionTextInput {
			for _, v := range values {
				if r.IntN(2) == 0 {
					req.Options = append(req.Options, protocol.Option{Value: v, Label: strings.ToUpper(v)})
				}
			}
		}
		m := protocol.New(protocol.TypeInteractionRequest, req)
		m.SessionID = "s1"
		if data, err := protocol.Encode(m); err != nil {
			continue
		} else if _, err := protocol.Decode(data); err != nil {
			continue // refused: no UI sees it
		}
		v := timeoutVector{Req: req}
		if ans := req.TimeoutAnswer(); ans != nil {
			v.Answer = &struct {
				Values []string `json:"values"`
				Text   string   `json:"text"`
			}{Values: append([]string{}, ans.SelectedValue.Values...), Text: ans.TextInput}
		}
		out = append(out, v)
	}
	if len(out) < 100 {
		t.Fatalf("only %d accepted requests", len(out))
	}
	return out
}

// titleVector is a title a person might type and what protocol.CleanTitle
// makes of it: the rename form's pre-check (manage.js cleanTitle) must agree.
type titleVector struct {
	In    string `json:"in"`
	Title string `json:"title"`
	OK    bool   `json:"ok"`
}

// titlePieces are what random titles are made of: the white space Go and
// JavaScript trim differently, control and bidi characters, letters of
// one and two UTF-16 units.
var titlePieces = []string{" ", "\t", "\n", "\u0085", "\u00a0", "\u2028", "\u3000", "\ufeff", "\u0007", "\u007f", "\u009f",
	"\u202e", "\u2066", "\u200b", "\u200f", "\u061c", "\u00ad", "\u200d", "\u034f", "\u3164", "\uffa0", "\U000E0041", "\U000E0100",
	"\U000E01F0", "\ufe0f", "a", "Z", "é", "😀", "-", "_"}

func titleVectors() []titleVector {
	r := rand.New(rand.NewPCG(20, 3))
	var out []titleVector
	add := func(in string) {
		clean, e := protocol.CleanTitle(in)
		out = append(out, titleVector{In: in, Title: clean, OK: e == nil})
	}
	for range 800 {
		var b strings.Builder
		for n := r.IntN(8); n >= 0; n-- {
			b.WriteString(titlePieces[r.IntN(len(titlePieces))])
		}
		add(b.String())
	}
	for _, n := range []int{protocol.MaxTitleRunes - 1, protocol.MaxTitleRunes, protocol.MaxTitleRunes + 1} {
		add(strings.Repeat("😀", n))
		add(" " + strings.Repeat("é", n) + "\u0085")
	}
	return out
}
