package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
)

func use(id string) llm.Block {
	return llm.Block{Type: llm.BlockToolUse, ToolUseID: id, ToolName: "Read", Input: json.RawMessage(`{}`)}
}

func result(id string) llm.Block {
	return llm.Block{Type: llm.BlockToolResult, ToolUseID: id, Content: []llm.Block{{Type: llm.BlockText, Text: "ok"}}}
}

func msg(role string, bs ...llm.Block) llm.Message { return llm.Message{Role: role, Content: bs} }

func txt(s string) llm.Block { return llm.Block{Type: llm.BlockText, Text: s} }

// shape is a history in short form: U/A per message, with (u:id) for a
// call, (r:id!) for a result (! when an error) and "t" for text.
func shape(h []llm.Message) string {
	var parts []string
	for _, m := range h {
		p := strings.ToUpper(m.Role[:1])
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockToolUse:
				p += "(u:" + b.ToolUseID + ")"
			case llm.BlockToolResult:
				p += "(r:" + b.ToolUseID
				if b.IsError {
					p += "!"
				}
				p += ")"
			default:
				p += "t"
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func TestRepairHistory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   []llm.Message
		cut  bool
		want string
	}{
		{"finished turn unchanged", []llm.Message{msg("user", txt("hi")), msg("assistant", txt("hello"))}, false, "Ut At"},
		{"cut while the model answered", []llm.Message{msg("user", txt("hi"))}, true, "Ut At"},
		{"cut before a call's result", []llm.Message{msg("user", txt("go")), msg("assistant", txt("x"), use("a"), use("b"))}, true,
			"Ut At(u:a)(u:b) U(r:a!)(r:b!) At"},
		{"one of two results kept", []llm.Message{msg("user", txt("go")), msg("assistant", use("a"), use("b")), msg("user", result("b"))}, true,
			"Ut A(u:a)(u:b) U(r:b)(r:a!) At"},
		{"orphan result dropped", []llm.Message{msg("user", txt("go"), result("zz")), msg("assistant", txt("ok"))}, false, "Ut At"},
		{"same roles merged", []llm.Message{msg("user", txt("a")), msg("user", txt("b")), msg("assistant", txt("c"))}, false, "Utt At"},
		{"max_turns end is not cut", []llm.Message{msg("user", txt("go")), msg("assistant", use("a")), msg("user", result("a"))}, false,
			"Ut A(u:a) U(r:a)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := repairHistory(c.in, c.cut)
			if s := shape(got); s != c.want {
				t.Fatalf("repaired %s, want %s", s, c.want)
			}
			if c.cut {
				last := got[len(got)-1]
				if last.Role != llm.RoleAssistant || messageText(last) != RestartedNote && c.name != "finished turn unchanged" {
					t.Fatalf("a cut turn ends with %+v", last)
				}
			}
			for _, m := range got {
				for _, b := range m.Content {
					if b.IsError && b.Content[0].Text != RestartedToolResult {
						t.Fatalf("synthetic result %q", b.Content[0].Text)
					}
				}
			}
		})
	}
}
