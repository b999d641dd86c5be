package agentspec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value string
		want  Spec
		code  string
	}{
		{"builtin", Spec{Kind: Builtin}, ""},
		{"  echo ", Spec{Kind: Echo}, ""},
		{"claude-code", Spec{Kind: ClaudeCode}, ""},
		{"claude-code:/opt/claude --model 'opus 4'", Spec{Kind: ClaudeCode, Command: []string{"/opt/claude", "--model", "opus 4"}}, ""},
		{"acp:gemini --experimental-acp", Spec{Kind: ACP, Command: []string{"gemini", "--experimental-acp"}}, ""},
		{`script:./review.sh --strict "two words" 'it''s' a\ b $'tab\there'`, Spec{Kind: Script, Command: []string{"./review.sh", "--strict", "two words", "its", "a b", "tab\there"}}, ""},
		{`script:python3 -c 'print("*.go $HOME")'`, Spec{Kind: Script, Command: []string{"python3", "-c", `print("*.go $HOME")`}}, ""},
		{"script:a\\*b", Spec{Kind: Script, Command: []string{"a*b"}}, ""},

		{"", Spec{}, CodeEmpty},
		{"   ", Spec{}, CodeEmpty},
		{"claude", Spec{}, CodeUnknown},
		{"Builtin", Spec{}, CodeUnknown},
		{"builtin:x", Spec{}, CodeUnknown},
		{"echo:", Spec{}, CodeUnknown},
		{"cmd:ls", Spec{}, CodeUnknown},
		{"acp", Spec{}, CodeNoCommand},
		{"acp:", Spec{}, CodeNoCommand},
		{"script:   ", Spec{}, CodeNoCommand},
		{"script:# only a comment", Spec{}, CodeNoCommand},
		{"claude-code:", Spec{}, CodeNoCommand},
		{`script:""`, Spec{}, CodeBadCommand},
		{"script:'open", Spec{}, CodeBadCommand},
		{`script:"open`, Spec{}, CodeBadCommand},
		{"script:a | b", Spec{}, CodeBadCommand},
		{"script:a > out", Spec{}, CodeBadCommand},
		{"script:a; rm x", Spec{}, CodeBadCommand},
		{"script:a && b", Spec{}, CodeBadCommand},
		{"script:a $HOME", Spec{}, CodeBadCommand},
		{`script:a "${X}"`, Spec{}, CodeBadCommand},
		{"script:a $(id)", Spec{}, CodeBadCommand},
		{"script:a `id`", Spec{}, CodeBadCommand},
		{"script:a $((1+1))", Spec{}, CodeBadCommand},
		{"script:a *.go", Spec{}, CodeBadCommand},
		{"script:a file?", Spec{}, CodeBadCommand},
		{"script:a {x,y}", Spec{}, CodeBadCommand},
		{"script:~/bin/agent", Spec{}, CodeBadCommand},
		{"script:a\x00b", Spec{}, CodeBadCommand},
	}
	for _, c := range cases {
		got, err := Parse(c.value)
		if c.code == "" {
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("Parse(%q) = %#v, %v; want %#v", c.value, got, err, c.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || e.Value != c.value || !errors.Is(err, &Error{Code: c.code}) {
			t.Errorf("Parse(%q) = %#v, %v; want code %s", c.value, got, err, c.code)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.code) || e.Reason == "" {
			t.Errorf("Parse(%q): message %q", c.value, msg)
		}
	}
}

func TestIDsAndDuplicates(t *testing.T) {
	t.Parallel()
	for v, id := range map[string]string{
		"builtin": "builtin", "claude-code:/x/claude": "claude-code",
		"acp:/usr/bin/gemini --experimental-acp": "acp:gemini", "script:./tools/review.sh": "script:review.sh",
	} {
		s, err := Parse(v)
		if err != nil || s.ID() != id {
			t.Errorf("%q: id %q, %v; want %q", v, s.ID(), err, id)
		}
	}
	if _, err := ParseAll([]string{"builtin", "script:./a/x.sh", "echo", "script:/b/x.sh --y"}); !errors.Is(err, &Error{Code: CodeDuplicate}) ||
		!strings.Contains(err.Error(), `"script:x.sh"`) {
		t.Fatalf("duplicate ids: %v", err)
	}
	if _, err := ParseAll([]string{"builtin", "bogus"}); !errors.Is(err, &Error{Code: CodeUnknown}) {
		t.Fatalf("bad value in a list: %v", err)
	}
	specs, err := ParseAll([]string{"builtin", "script:./a/x.sh", "script:./a/y.sh"})
	if err != nil || len(specs) != 3 {
		t.Fatalf("ParseAll: %v, %v", specs, err)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	none := func(string) (string, error) { return "", errors.New("not found") }
	if got := Defaults(none); !reflect.DeepEqual(got, []Spec{{Kind: Builtin}, {Kind: Echo}}) {
		t.Fatalf("without claude: %v", got)
	}
	found := func(name string) (string, error) { return "/opt/bin/" + name, nil }
	want := []Spec{{Kind: Builtin}, {Kind: Echo}, {Kind: ClaudeCode, Command: []string{"/opt/bin/claude"}}}
	if got := Defaults(found); !reflect.DeepEqual(got, want) {
		t.Fatalf("with claude: %v", got)
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	specs, err := ParseAll([]string{"builtin", "echo", "script:sh -c 'cat'"})
	if err != nil {
		t.Fatal(err)
	}
	ads, err := BuildAll(specs, Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range ads {
		ids = append(ids, a.Capability().ID)
	}
	if strings.Join(ids, ",") != "builtin,echo,script:sh" {
		t.Fatalf("ids %v", ids)
	}
	if _, ok := ads[0].(*builtin.Adapter); !ok {
		t.Fatalf("builtin is %T", ads[0])
	}
	if _, ok := ads[1].(*echo.Adapter); !ok {
		t.Fatalf("echo is %T", ads[1])
	}
	if ads[2].Capability().FileTokens != "arguments" {
		t.Fatalf("script capability %+v", ads[2].Capability())
	}
	// The same id from two different specs is refused at build time too.
	if _, err := BuildAll([]Spec{{Kind: Script, Command: []string{"/a/x"}}, {Kind: Script, Command: []string{"/b/x"}}}, Options{}); !errors.Is(err, &Error{Code: CodeDuplicate}) {
		t.Fatalf("duplicate build: %v", err)
	}
	// Claude Code and ACP agents: the ids and file-token styles their
	// adapters declare.
	specs, err = ParseAll([]string{"claude-code:./bin/claude --verbose", "acp:/usr/bin/gemini --experimental-acp"})
	if err != nil {
		t.Fatal(err)
	}
	ads, err = BuildAll(specs, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c := ads[0].Capability(); c.ID != "claude-code" || c.FileTokens != "mention" {
		t.Fatalf("claude-code capability %+v", c)
	}
	if c := ads[1].Capability(); c.ID != "acp:gemini" || c.FileTokens != "file_list" {
		t.Fatalf("acp capability %+v", c)
	}
	if _, err := (Spec{Kind: ACP}).Build(Options{}); !errors.Is(err, &Error{Code: CodeUnavailable}) {
		t.Fatalf("acp without a command: %v", err)
	}
	if _, err := (Spec{Kind: "nope"}).Build(Options{}); !errors.Is(err, &Error{Code: CodeUnknown}) {
		t.Fatalf("unknown kind: %v", err)
	}
}

// FuzzParse: Parse never panics; what it accepts is a valid spec that
// String writes back to the same spec; what it refuses has a known code.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"builtin", "echo", "claude-code", "claude-code:claude --verbose", "acp:gemini --experimental-acp",
		`script:./a.sh "x y" 'z' a\ b $'\t'`, "script:a | b", "script:$HOME", "script:'", "script:~/x", "acp:", "",
	} {
		f.Add(s)
	}
	codes := map[string]bool{CodeEmpty: true, CodeUnknown: true, CodeNoCommand: true, CodeBadCommand: true}
	f.Fuzz(func(t *testing.T, value string) {
		s, err := Parse(value)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !codes[e.Code] || e.Value != value {
				t.Fatalf("Parse(%q): %#v", value, err)
			}
			return
		}
		switch s.Kind {
		case Builtin, Echo:
			if s.Command != nil {
				t.Fatalf("Parse(%q): %#v", value, s)
			}
		case ClaudeCode:
		case ACP, Script:
			if len(s.Command) == 0 {
				t.Fatalf("Parse(%q): no command", value)
			}
		default:
			t.Fatalf("Parse(%q): kind %q", value, s.Kind)
		}
		if len(s.Command) > 0 && s.Command[0] == "" {
			t.Fatalf("Parse(%q): empty command name", value)
		}
		back, err := Parse(s.String())
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("Parse(%q) = %#v; String %q parses to %#v, %v", value, s, s.String(), back, err)
		}
	})
}
