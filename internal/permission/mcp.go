package permission

import "strings"

// mcpPrefix starts the name of every MCP server's tool the agent offers
// (mcp__SERVER__TOOL, internal/mcpclient).
const mcpPrefix = "mcp__"

// IsMCPTool reports whether name is an MCP tool's name, or a server's
// (mcp__SERVER), as rules may name them: the prefix, then letters, digits,
// "_" and "-" only.
func IsMCPTool(name string) bool {
	rest, ok := strings.CutPrefix(name, mcpPrefix)
	if !ok || rest == "" {
		return false
	}
	return strings.IndexFunc(rest, func(r rune) bool { return !mcpNameRune(r) }) < 0
}

func mcpNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// mcpCovers reports whether a rule naming ruleTool (a tool, or a server:
// mcp__SERVER) applies to a call of the MCP tool callTool.
func mcpCovers(ruleTool, callTool string) bool {
	return ruleTool == callTool || strings.HasPrefix(callTool, ruleTool+"__")
}

// decideMCP decides a call of an MCP tool by its name alone: deny, then
// ask, then allow rules naming it or its server. With none it asks, also
// for a tool its server calls read-only: that is the server's hint, not a
// guarantee ferry can check (plan and review modes still take it, since
// they refuse what is not read-only).
func (r Rules) decideMCP(c Call) Decision {
	for _, l := range []struct {
		rules []Rule
		d     Decision
	}{{r.Deny, Deny}, {r.Ask, Ask}, {r.Allow, Allow}} {
		for _, rule := range l.rules {
			// A pattern is never valid on an MCP rule: such a deny or
			// ask rule fails closed, such an allow rule never allows.
			if mcpCovers(rule.Tool, c.Tool) && (rule.Pattern == "" || l.d != Allow) {
				return l.d
			}
		}
	}
	return Ask
}
