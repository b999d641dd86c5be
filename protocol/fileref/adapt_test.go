package fileref

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func TestConversions(t *testing.T) {
	auth := ref("ref_0", "src/auth.ts")
	spaced := ref("ref_1", "my docs/note 1.md")
	lost := protocol.FileReference{RefID: "ref_2", Name: "gone"} // no path: cannot be converted
	wsOnly := protocol.FileReference{RefID: "ref_3", WorkspaceRelativePath: "ws/only.go"}
	badPath := ref("ref_4", "a\nb.ts")
	hash := ref("ref_5", "notes#1.md")
	agent := ref("ref_6", "agent-x.md")
	refs := []protocol.FileReference{auth, spaced, lost, wsOnly, badPath, hash, agent}

	type want struct {
		literal, fileList, labels, mentions, script string
		files                                       []protocol.FileReference
		args                                        []string
	}
	tests := []struct {
		name string
		in   string
		want want
	}{
		{
			name: "spec example",
			in:   `\<@file:injection>은 위조이고, 이건 진짜야 <@file:ref_0|src/auth.ts>`,
			want: want{
				literal:  "<@file:injection>은 위조이고, 이건 진짜야 src/auth.ts",
				fileList: "<@file:injection>은 위조이고, 이건 진짜야 src/auth.ts",
				labels:   "<@file:injection>은 위조이고, 이건 진짜야 [File: src/auth.ts]",
				mentions: "<@file:injection>은 위조이고, 이건 진짜야 @src/auth.ts",
				script:   "<@file:injection>은 위조이고, 이건 진짜야 src/auth.ts",
				files:    []protocol.FileReference{auth},
				args:     []string{"src/auth.ts"},
			},
		},
		{
			name: "display differs from path; repeated file listed once",
			in:   "fix <@file:ref_0|auth.ts (src)> then <@file:ref_0|auth>",
			want: want{
				literal:  "fix auth.ts (src) then auth",
				fileList: "fix src/auth.ts then src/auth.ts",
				labels:   "fix [File: src/auth.ts] then [File: src/auth.ts]",
				mentions: "fix @src/auth.ts then @src/auth.ts",
				script:   "fix src/auth.ts then src/auth.ts",
				files:    []protocol.FileReference{auth},
				args:     []string{"src/auth.ts"},
			},
		},
		{
			name: "reference without a path: display path, never dropped",
			in:   "read <@file:ref_2|gone.txt> now",
			want: want{
				literal:  "read gone.txt now",
				fileList: "read gone.txt now",
				labels:   "read gone.txt now",
				mentions: "read gone.txt now",
				script:   "read gone.txt now",
			},
		},
		{
			name: "path with a line break cannot be written: display path",
			in:   "read <@file:ref_4|a b.ts>",
			want: want{
				literal:  "read a b.ts",
				fileList: "read a b.ts",
				labels:   "read a b.ts",
				mentions: "read a b.ts",
				script:   "read a b.ts",
			},
		},
		{
			name: "workspace_relative_path stands in for a missing path",
			in:   "<@file:ref_3|only>",
			want: want{
				literal:  "only",
				fileList: "ws/only.go",
				labels:   "[File: ws/only.go]",
				mentions: "@ws/only.go",
				script:   "ws/only.go",
				files:    []protocol.FileReference{wsOnly},
				args:     []string{"ws/only.go"},
			},
		},
		{
			name: "mentions: quoting and spacing",
			in:   "(<@file:ref_0|a>)<@file:ref_1|b>를 봐 <@file:ref_6|c> <@file:ref_5|notes#1.md>",
			want: want{
				literal:  "(a)b를 봐 c notes#1.md",
				fileList: "(src/auth.ts)my docs/note 1.md를 봐 agent-x.md notes#1.md",
				labels:   "([File: src/auth.ts])[File: my docs/note 1.md]를 봐 [File: agent-x.md] [File: notes#1.md]",
				mentions: `( @"src/auth.ts") @"my docs/note 1.md"를 봐 @"agent-x.md" notes#1.md`,
				script:   "(src/auth.ts)my docs/note 1.md를 봐 agent-x.md notes#1.md",
				files:    []protocol.FileReference{auth, spaced, agent, hash},
				args:     []string{"src/auth.ts", "my docs/note 1.md", "agent-x.md", "notes#1.md"},
			},
		},
		{
			name: "mentions: adjacent files, line start",
			in:   "<@file:ref_0|a><@file:ref_0|a>\n<@file:ref_0|a>.",
			want: want{
				literal:  "aa\na.",
				fileList: "src/auth.tssrc/auth.ts\nsrc/auth.ts.",
				labels:   "[File: src/auth.ts][File: src/auth.ts]\n[File: src/auth.ts].",
				mentions: "@src/auth.ts @src/auth.ts\n@\"src/auth.ts\".",
				script:   "src/auth.tssrc/auth.ts\nsrc/auth.ts.",
				files:    []protocol.FileReference{auth},
				args:     []string{"src/auth.ts"},
			},
		},
		{
			name: "unmapped token stays literal in every style",
			in:   "<@file:ref_9|x.ts>",
			want: want{
				literal:  "<@file:ref_9|x.ts>",
				fileList: "<@file:ref_9|x.ts>",
				labels:   "<@file:ref_9|x.ts>",
				mentions: "<@file:ref_9|x.ts>",
				script:   "<@file:ref_9|x.ts>",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse(tt.in, refs)
			check := func(style, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s\n got %q\nwant %q", style, got, want)
				}
			}
			check("Literal", p.Literal(), tt.want.literal)
			fileListText, files := p.FileList()
			check("FileList", fileListText, tt.want.fileList)
			if !reflect.DeepEqual(files, tt.want.files) {
				t.Errorf("FileList files\n got %+v\nwant %+v", files, tt.want.files)
			}
			check("Labels", p.Labels(), tt.want.labels)
			check("Mentions", p.Mentions(), tt.want.mentions)
			scriptText, args := p.ScriptArgs()
			check("ScriptArgs", scriptText, tt.want.script)
			if !reflect.DeepEqual(args, tt.want.args) {
				t.Errorf("ScriptArgs args = %q, want %q", args, tt.want.args)
			}
		})
	}
}

// TestResolve: a refused reference becomes its display path as text
// (merged with the text around it), an accepted one is replaced for every
// part that names it, and resolve runs once per reference.
func TestResolve(t *testing.T) {
	refs := []protocol.FileReference{ref("ref_0", "a.go"), ref("ref_1", "/etc/passwd")}
	pr := Parse("see <@file:ref_0|a.go> and <@file:ref_1|passwd>!<@file:ref_0|again>", refs)
	calls := map[string]int{}
	got := pr.Resolve(func(r protocol.FileReference) (protocol.FileReference, bool) {
		calls[r.RefID]++
		if r.RefID == "ref_1" {
			return protocol.FileReference{}, false
		}
		r.Path = "/ws/" + r.Path
		return r, true
	})
	if calls["ref_0"] != 1 || calls["ref_1"] != 1 {
		t.Errorf("resolve calls %v, want one per reference", calls)
	}
	if len(got.Parts) != 4 || got.Parts[2].Text != " and passwd!" || got.Parts[1].File != got.Parts[3].File {
		t.Fatalf("parts %+v", got.Parts)
	}
	if s := got.Labels(); s != "see [File: /ws/a.go] and passwd![File: /ws/a.go]" {
		t.Errorf("Labels() = %q", s)
	}
	if files := got.Files(); len(files) != 1 || files[0].Path != "/ws/a.go" {
		t.Errorf("Files() = %+v", files)
	}
	if pr.Parts[1].File.Path != "a.go" || len(pr.Parts) != 6 {
		t.Errorf("the receiver changed: %+v", pr.Parts)
	}
	all := pr.Resolve(func(protocol.FileReference) (protocol.FileReference, bool) { return protocol.FileReference{}, false })
	if len(all.Parts) != 1 || all.Parts[0].Text != "see a.go and passwd!again" {
		t.Errorf("all refused: %+v", all.Parts)
	}
}

func TestInline(t *testing.T) {
	refs := []protocol.FileReference{ref("ref_0", "src/auth.ts"), ref("ref_1", "missing.ts"), ref("ref_2", "doc.md")}
	contents := map[string]string{
		"src/auth.ts": "export const x = 1\n",
		"doc.md":      "```go\nfmt.Println()\n```",
	}
	calls := map[string]int{}
	load := func(r protocol.FileReference) (string, error) {
		calls[r.Path]++
		if c, ok := contents[r.Path]; ok {
			return c, nil
		}
		return "", errors.New("no such file")
	}
	tests := []struct {
		name, in, want string
	}{
		{
			name: "spec example, content inlined",
			in:   "이 파일의 버그를 찾아줘 <@file:ref_0|src/auth.ts>",
			want: "이 파일의 버그를 찾아줘 \n[File: src/auth.ts]\n```\nexport const x = 1\n```",
		},
		{
			name: "load fails: display path literal",
			in:   "see <@file:ref_1|the missing one>, please",
			want: "see the missing one, please",
		},
		{
			name: "second mention gets the label only; fence outgrows content",
			in:   "<@file:ref_2|d> and <@file:ref_2|d>\nbye",
			want: "[File: doc.md]\n````\n```go\nfmt.Println()\n```\n````\n and [File: doc.md]\nbye",
		},
		{
			name: "block ends before a line break",
			in:   "a <@file:ref_0|x>\nb",
			want: "a \n[File: src/auth.ts]\n```\nexport const x = 1\n```\nb",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clear(calls)
			got := Parse(tt.in, refs).Inline(load)
			if got != tt.want {
				t.Errorf("Inline\n got %q\nwant %q", got, tt.want)
			}
			for path, n := range calls {
				if n != 1 {
					t.Errorf("load(%s) called %d times, want once", path, n)
				}
			}
		})
	}
	if got := Parse("x <@file:ref_0|a>", refs).Inline(nil); got != "x a" {
		t.Errorf("nil loader: got %q", got)
	}
}
