package permission

import "testing"

// TestMCPRules: rules name MCP tools and servers exactly, deny beats
// allow, no rule asks even for a read-only tool, and patterns are refused.
func TestMCPRules(t *testing.T) {
	t.Parallel()
	parse := func(ss ...string) []Rule {
		var out []Rule
		for _, s := range ss {
			r, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			out = append(out, r)
		}
		return out
	}
	rs := Rules{Allow: parse("mcp__files__read", "mcp__git"), Deny: parse("mcp__git__push"), Ask: parse("mcp__files__list")}
	for _, tc := range []struct {
		tool     string
		readOnly bool
		want     Decision
	}{
		{"mcp__files__read", false, Allow},
		{"mcp__files__write", false, Ask},
		{"mcp__files__stat", true, Ask}, // the server's read-only hint does not allow
		{"mcp__files__list", true, Ask},
		{"mcp__git__log", false, Allow},
		{"mcp__git__push", false, Deny},
		{"mcp__gitx__log", false, Ask}, // another server, not a prefix match
		{"mcp__files__read_all", false, Ask},
	} {
		if got := rs.Decide(Call{Tool: tc.tool, ReadOnly: tc.readOnly}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.tool, got, tc.want)
		}
	}
	if got := RulesFor(Call{Tool: "mcp__files__write"}); len(got) != 1 || got[0].String() != "mcp__files__write" {
		t.Errorf("RulesFor %v", got)
	}
	if got := rs.RulesFor(Call{Tool: "mcp__files__write", Path: "x"}); len(got) != 1 || got[0].String() != "mcp__files__write" {
		t.Errorf("Rules.RulesFor %v", got)
	}
	for _, bad := range []string{"mcp__files__read(x)", "mcp__", "mcp__a b", "mcp__a.b"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	// Built without Parse: a patterned deny fails closed, a patterned
	// allow never allows.
	odd := Rules{Deny: []Rule{{Tool: "mcp__x__y", Pattern: "z"}}, Allow: []Rule{{Tool: "mcp__x__z", Pattern: "z"}}}
	if odd.Decide(Call{Tool: "mcp__x__y"}) != Deny || odd.Decide(Call{Tool: "mcp__x__z"}) != Ask {
		t.Error("patterned MCP rules")
	}
}
