package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/protocol"
)

// A prompt's config_overrides, the ACP way. ACP gives a client no say over
// an agent's turn budget, answer format or tools, so:
//
//   - allowed_tools and denied_tools become permission rules ferry applies
//     itself, for that prompt, wherever it sees the agent's calls: its fs
//     requests and its permission requests.
//   - json_schema and max_turns fail the prompt with
//     agent.error code unsupported naming the key, before the agent gets
//     it (adapter.CheckPrompt against the capability's Settings).
//   - output_format is rendered by ferry from the turn's events, as for
//     every adapter.

// refusals say why an ACP agent refuses a prompt setting.
var refusals = map[string]string{
	adapter.SettingJSONSchema: "an ACP agent gives no structured answer, so ferry cannot check one against a schema",
	adapter.SettingMaxTurns:   "ACP offers no way to bound an agent's turns",
}

// promptRules reads a prompt's config_overrides: the permission rules of
// the prompt (nil for none), or the agent.error that refuses it.
func (s *session) promptRules(req *protocol.PromptRequest) (*permission.Rules, *protocol.AgentError) {
	if ae := adapter.CheckPrompt(s.a.Capability(), req, refusals); ae != nil {
		return nil, ae
	}
	if req == nil || req.ConfigOverrides == nil {
		return nil, nil
	}
	o := req.ConfigOverrides
	if len(o.AllowedTools) == 0 && len(o.DeniedTools) == 0 {
		return nil, nil
	}
	rules := &permission.Rules{Workspace: s.ws}
	for i, r := range o.DeniedTools {
		rule, err := permission.Parse(r)
		if err != nil {
			return nil, &protocol.AgentError{Code: protocol.AgentCodeBadRequest, Message: fmt.Sprintf("config_overrides.denied_tools[%d]: %s", i, safeRuleError(err))}
		}
		rules.Deny = append(rules.Deny, rule)
	}
	for i, r := range o.AllowedTools {
		rule, err := permission.Parse(r)
		if err != nil {
			return nil, &protocol.AgentError{Code: protocol.AgentCodeBadRequest, Message: fmt.Sprintf("config_overrides.allowed_tools[%d]: %s", i, safeRuleError(err))}
		}
		rules.Allow = append(rules.Allow, rule)
	}
	return rules, nil
}

// safeRuleError is a rule's parse error as the user may see it: the
// permission package's *Error names the rule and what is wrong with it.
func safeRuleError(err error) string {
	var pe *permission.Error
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return "not a valid permission rule"
}

// rulePath is an agent's path as permission.Call takes it:
// workspace-relative inside the workspace, else absolute; a path with ".."
// as given, since after a symbolic link ".." leads elsewhere than the text
// says (the rules resolve it).
func (s *session) rulePath(p string) string {
	if p == "" {
		return ""
	}
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if seg == ".." {
			return filepath.ToSlash(p)
		}
	}
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if rel, ok := s.relPath(p); ok {
		return rel
	}
	return filepath.Clean(p)
}

// fileDenied reports whether the prompt's rules deny one of tools on path.
// Dispatcher only.
func (s *session) fileDenied(path string, readOnly bool, tools ...string) bool {
	if s.rules == nil {
		return false
	}
	p := s.rulePath(path)
	for _, tool := range tools {
		if s.rules.Decide(permission.Call{Tool: tool, Path: p, ReadOnly: readOnly}) == permission.Deny {
			return true
		}
	}
	return false
}

// ruleCalls are a permission request's calls as the rules see them: one
// per path the call names (its input's file_path, notebook_path or path,
// and its locations), under the tool whose rules govern its kind. A call
// of no kind ferry knows ("other", none) meets the Read and the Edit rules
// of each path, and allow rules never cover it (sure is false).
func (s *session) ruleCalls(tc sessionUpdate) (calls []permission.Call, sure bool) {
	base := modeCall(tc)
	tools := []string{base.Tool}
	sure = true
	switch deref(tc.Kind) {
	case "read":
		tools = []string{"Read"}
	case "search":
		tools = []string{"Grep"} // Read rules cover it
	case "edit", "delete", "move":
		tools = []string{"Edit"} // Write and Edit rules cover it
	case "execute":
		base.Dir = s.ws
		return []permission.Call{base}, true
	case "think", "fetch", "switch_mode":
	default:
		tools, sure = []string{"Read", "Edit"}, false
	}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Path         string `json:"path"`
		// opencode's tools name it filePath, its permission requests
		// filepath (keys match without regard to case).
		FilePathCamel string `json:"filePath"`
	}
	_ = json.Unmarshal(tc.RawInput, &in) // a malformed input names no path
	paths := []string{in.FilePath, in.NotebookPath, in.Path, in.FilePathCamel}
	for _, l := range tc.Locations[:min(len(tc.Locations), maxLocations)] {
		paths = append(paths, l.Path)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		for _, tool := range tools {
			c := base
			c.Tool, c.Path = tool, s.rulePath(p)
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		calls = append(calls, base)
	}
	return calls, sure
}

// ruleDecision decides a permission request by the prompt's rules: Deny
// if a deny rule matches any of its calls, Allow if allow rules cover
// every one (a read-only call's default allowance does not count: the
// agent asked), else Ask. Dispatcher only.
func (s *session) ruleDecision(tc sessionUpdate) permission.Decision {
	if s.rules == nil {
		return permission.Ask
	}
	calls, sure := s.ruleCalls(tc)
	if _, denied := s.deniedCall(calls); denied {
		return permission.Deny
	}
	if !sure {
		return permission.Ask
	}
	for _, c := range calls {
		c.ReadOnly = false
		if s.rules.Decide(c) != permission.Allow {
			return permission.Ask
		}
	}
	return permission.Allow
}

// deniedCall returns the first of calls a deny rule of the prompt
// matches.
func (s *session) deniedCall(calls []permission.Call) (permission.Call, bool) {
	for _, c := range calls {
		if s.rules != nil && s.rules.Decide(c) == permission.Deny {
			return c, true
		}
	}
	return permission.Call{}, false
}

// stopUnheld ends the turn when a call ferry would have refused has
// completed: one that a deny rule of the prompt covers, or a writing or
// executing call (kind edit, delete, move, execute) the mode refuses. The
// agent ran it without a permission request or an fs request ferry could
// refuse (opencode reads and edits files itself and asks only what its own
// config says), so the rule or mode was not held. The agent gets
// session/cancel; the turn ends with an agent.error and stop reason error
// (finishTurn). Dispatcher only.
func (s *session) stopUnheld(ts *turnState, id string) {
	if ts.unheld {
		return
	}
	tc := knownCall(ts, sessionUpdate{ToolCallID: id})
	calls, _ := s.ruleCalls(tc)
	c, denied := s.deniedCall(calls)
	why := "which a permission rule of this prompt denies"
	if !denied {
		switch deref(tc.Kind) {
		case "edit", "delete", "move", "execute":
		default:
			return
		}
		mc := modeCall(tc)
		if mc.Tool == "Bash" {
			mc.Dir = s.ws
		}
		mode := s.currentMode()
		if ok, _ := permission.ModeAllows(mode, mc); ok {
			return
		}
		c, why = calls[0], "which ferry refuses in "+mode+" mode"
	}
	ts.unheld = true
	what := c.Tool
	if c.Path != "" {
		what += " on " + s.shown(c.Path)
	} else if c.Command != "" {
		what += " " + strconv.Quote(runecut.Prefix(c.Command, 200))
	}
	s.log.Warn("acp: the agent ran a call ferry refuses without asking; stopping the turn", "call", runecut.Prefix(id, 256), "tool", c.Tool, "why", why)
	s.emit(ts, protocol.TypeAgentError, &protocol.AgentError{TurnID: ts.id, Code: protocol.AgentCodeAgentError,
		Message: "the ACP agent ran " + what + " by itself, " + why + "; " +
			"ferry cannot hold this agent to it (set the agent to ask before such calls) and stopped the turn"})
	s.notify(acpsdk.AgentMethodSessionCancel, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(s.sessionID())})
	s.cancelAsks(ts)
}

// knownCall completes a permission request's tool call with what the
// turn's updates said of it: a request may leave out the kind, the input
// and the locations of a call the agent announced before.
func knownCall(ts *turnState, tc sessionUpdate) sessionUpdate {
	st := ts.tools[tc.ToolCallID]
	if st == nil || tc.ToolCallID == "" {
		return tc
	}
	if deref(tc.Kind) == "" && st.kind != "" {
		k := st.kind
		tc.Kind = &k
	}
	if len(tc.RawInput) == 0 || string(tc.RawInput) == "null" {
		tc.RawInput = st.rawInput
	}
	for _, p := range st.locations {
		tc.Locations = append(tc.Locations, location{Path: p})
	}
	return tc
}
