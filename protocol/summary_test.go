package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

func TestTitleFromPrompt(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Fix the login bug", "Fix the login bug"},
		{"  \n\n# Fix the **login** bug\nand the rest", "Fix the login bug"},
		{"```go\nfunc main() {}\n```\nwhy?", "func main() {}"},
		{"- [ ] add `tests` for [the parser](https://x.test/p)", "add tests for the parser"},
		{"> quoted  \t text\u200b\u202ehere", "quoted text here"},
		{"1. first step", "first step"},
		{"tab\tand\u00a0nbsp", "tab and nbsp"},
		{strings.Repeat("word ", 30), "word word word word word word word word word word word word…"},
		{strings.Repeat("x", 100), strings.Repeat("x", 59) + "…"},
		{"   \n\t\n", ""},
		{"***", ""},
		{"bad \xff utf8", "bad utf8"},
	} {
		got := protocol.TitleFromPrompt(tc.in)
		if got != tc.want {
			t.Errorf("TitleFromPrompt(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > protocol.MaxAutoTitleRunes {
			t.Errorf("TitleFromPrompt(%q) has %d characters", tc.in, n)
		}
		if _, e := protocol.CleanTitle(got); e != nil || strings.TrimSpace(got) != got {
			t.Errorf("TitleFromPrompt(%q) = %q is not a clean title: %v", tc.in, got, e)
		}
	}
}

func TestPreview(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Done.\n\nI changed **two** files:\n- `a.go`\n- b.go", "Done. I changed two files: a.go b.go"},
		{"```\ncode\n```\nafter", "code after"},
		{"line\u2028sep\u0007bell", "line sep bell"},
	} {
		if got := protocol.Preview(tc.in); got != tc.want {
			t.Errorf("Preview(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := protocol.Preview(strings.Repeat("a long answer ", 1000))
	if n := utf8.RuneCountInString(long); n > protocol.MaxPreviewRunes || !strings.HasSuffix(long, "…") || strings.Contains(long, "  ") {
		t.Errorf("Preview of a long answer: %d characters: %q", n, long)
	}
}

// FuzzTitleFromPrompt: whatever the prompt, the title is a clean title
// (CleanTitle accepts it unchanged) of at most MaxAutoTitleRunes on one line.
func FuzzTitleFromPrompt(f *testing.F) {
	for _, s := range []string{"# Fix it", "a\u202eb", "```\nx", "[a](b) **c**", strings.Repeat("é ", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, got := range []string{protocol.TitleFromPrompt(in), protocol.Preview(in)} {
			c, e := protocol.CleanTitle(got)
			if e != nil || c != got || strings.ContainsAny(got, "\n\r\t") {
				t.Fatalf("from %q: %q is not a clean one-line title: %v", in, got, e)
			}
		}
		if n := utf8.RuneCountInString(protocol.TitleFromPrompt(in)); n > protocol.MaxAutoTitleRunes {
			t.Fatalf("from %q: %d characters", in, n)
		}
	})
}

// TestAgentTitleValidation: agent.title carries one clean line of at most
// 60 characters; AgentTitleText makes one from what an agent said.
func TestAgentTitleValidation(t *testing.T) {
	refused := 0
	for _, bad := range []string{"", " x", "two\nlines", "a\u202eb", "a  b", strings.Repeat("x", 61), "zero\u200bwidth"} {
		if err := decodeTitle(t, bad); err == nil {
			t.Errorf("agent.title %q decoded", bad)
		} else {
			refused++
		}
	}
	if refused != 7 {
		t.Fatalf("%d of 7 bad titles refused", refused)
	}
	for _, in := range []string{"  Fix the\tlogin\n bug ", "a\u202eb", strings.Repeat("word ", 30)} {
		got := protocol.AgentTitleText(in)
		if err := decodeTitle(t, got); err != nil {
			t.Errorf("AgentTitleText(%q) = %q is refused: %v", in, got, err)
		}
	}
}

func decodeTitle(t *testing.T, title string) error {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": protocol.TypeAgentTitle, "message_id": protocol.NewID(), "session_id": "s1",
		"payload": map[string]any{"title": title}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = protocol.Decode(b)
	return err
}
