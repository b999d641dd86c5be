package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/mcpclient/mcptest"
	"github.com/ferry-dev/ferry/internal/tokencount"
	"github.com/ferry-dev/ferry/internal/tools"
)

// FuzzConvert: any result a server may send converts without panicking;
// the text the model gets stays within the token gate (plus the cut
// note), valid UTF-8 when the server's was, and at most maxImages images.
func FuzzConvert(f *testing.F) {
	png := base64.StdEncoding.EncodeToString(mcptest.PNG(3, 2))
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"bad"}],"isError":true}`,
		`{"content":[{"type":"image","mimeType":"image/png","data":"` + png + `"}]}`,
		`{"content":[{"type":"image","mimeType":"image/png","data":"AAAA"}]}`,
		`{"content":[{"type":"audio","mimeType":"audio/wav","data":"AAAA"}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x","size":3}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"mem://a","text":"t"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"mem://b","mimeType":"image/png","blob":"` + png + `"}}]}`,
		`{"content":[],"structuredContent":{"a":[1,2,{"b":null}]}}`,
		`{"content":null}`,
		`{"content":[{"type":"text","text":"` + strings.Repeat("word ", 400) + `"}]}`,
	} {
		f.Add([]byte(seed))
	}
	env := &tools.Env{Limits: tools.Limits{MaxReadTokens: 100}}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res mcp.CallToolResult
		if err := json.Unmarshal(data, &res); err != nil {
			return
		}
		out, err := convert(context.Background(), env, "srv", "tool", &res)
		if err != nil {
			if tools.CodeOf(err) != tools.CodeMCP {
				t.Fatalf("error %v", err)
			}
			return
		}
		images := 0
		validIn := true
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok && !utf8.ValidString(tc.Text) {
				validIn = false
			}
		}
		for _, b := range out.Blocks {
			switch b.Type {
			case "image":
				images++
			case "text":
				body, _, _ := strings.Cut(b.Text, "\n\n[ferry cut this result")
				n, err := tokencount.Default().CountTokens(context.Background(), body)
				if err != nil || n > 100 && !strings.HasPrefix(body, "Image ") {
					t.Fatalf("%d tokens of text (%v): %q", n, err, body)
				}
				if validIn && !utf8.ValidString(b.Text) {
					t.Fatalf("invalid UTF-8 out of valid input: %q", b.Text)
				}
			default:
				t.Fatalf("block of type %q", b.Type)
			}
		}
		if images > maxImages {
			t.Fatalf("%d images", images)
		}
	})
}

// TestToolName: the names are valid for model APIs, unique, and stable.
func TestToolName(t *testing.T) {
	used := map[string]bool{}
	long := strings.Repeat("n", 70)
	cases := []struct{ server, tool, want string }{
		{"git hub", "create.issue", "mcp__git_hub__create_issue"},
		{"é", "ü✓", "mcp_______"}, // one "_" a rune
		{"", "", "mcp______"},
		{"_", "_", ""}, // the same name as "", "": hashed
		{"s", long, ""},
		{"s", long + "x", ""},
	}
	var first []string
	for _, c := range cases {
		got := toolName(c.server, c.tool, used)
		if c.want != "" && got != c.want {
			t.Errorf("%q/%q: %q, want %q", c.server, c.tool, got, c.want)
		}
		if len(got) > maxName || used[got] || sanitize(got) != got {
			t.Errorf("%q/%q: bad or repeated name %q", c.server, c.tool, got)
		}
		used[got] = true
		first = append(first, got)
	}
	used = map[string]bool{}
	for i, c := range cases {
		if got := toolName(c.server, c.tool, used); got != first[i] {
			t.Errorf("%q/%q: %q, then %q", c.server, c.tool, first[i], got)
		}
		used[first[i]] = true
	}
}

// TestExpand: ${VAR} and ${VAR:-default} expand; an unset variable without
// default and a malformed reference are errors naming them.
func TestExpand(t *testing.T) {
	env := map[string]string{"A": "1", "B_2": "two"}
	getenv := func(k string) string { return env[k] }
	for in, want := range map[string]string{
		"plain $A ${A}":        "plain $A 1",
		"${B_2}/${C:-d/e}":     "two/d/e",
		"${A:-x}${EMPTY:-}end": "1end",
	} {
		if got, err := expand(in, getenv); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"${NOPE}":  "NOPE is not set",
		"${A":      "unclosed",
		"${1A}":    "bad variable name",
		"x${}":     "bad variable name",
		"${A-B:-}": "bad variable name",
	} {
		if _, err := expand(in, getenv); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", in, err, msg)
		}
	}
}

// FuzzExpand: expansion never panics; text without "${" is kept as it is,
// and a successful expansion leaves no reference behind when the values
// hold none.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"plain", "${A}", "${A:-d}", "x${B}y${C:-}", "${", "${}", "$${A}}", "${A:-${B}}"} {
		f.Add(s)
	}
	getenv := func(k string) string {
		if k == "A" {
			return "va"
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := expand(s, getenv)
		if !strings.Contains(s, "${") && (err != nil || out != s) {
			t.Fatalf("%q: %q, %v", s, out, err)
		}
		if err == nil && strings.Count(out, "${") > strings.Count(s, "${") {
			t.Fatalf("%q expanded to more references: %q", s, out)
		}
	})
}
