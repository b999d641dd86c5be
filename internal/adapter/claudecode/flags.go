package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// promptFlags are the command-line flags a prompt's config_overrides map
// to. Claude Code takes them only at start, so a process runs with one set;
// a prompt with another set restarts it (resuming the conversation).
type promptFlags struct {
	maxTurns int
	allowed  []string
	denied   []string
	schema   string // compact JSON, "" for none
}

// flagsOf reads a prompt's overrides. output_format is not among them:
// the adapter always streams.
func flagsOf(req *protocol.PromptRequest) promptFlags {
	var f promptFlags
	if req == nil || req.ConfigOverrides == nil {
		return f
	}
	o := req.ConfigOverrides
	if o.MaxTurns != nil && *o.MaxTurns > 0 {
		f.maxTurns = *o.MaxTurns
	}
	f.allowed = cleanRules(o.AllowedTools)
	f.denied = cleanRules(o.DeniedTools)
	if len(bytes.TrimSpace(o.JSONSchema)) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, o.JSONSchema); err == nil && b.String() != "null" {
			f.schema = b.String()
		}
	}
	return f
}

// cleanRules drops empty rules and rules no command line can carry (NUL,
// line breaks; badRule refuses a prompt with one before it gets here).
func cleanRules(rules []string) []string {
	var out []string
	for _, r := range rules {
		r = strings.TrimSpace(r)
		if r == "" || strings.ContainsAny(r, "\x00\r\n") {
			continue
		}
		out = append(out, r)
	}
	return out
}

// args are the flags on Claude Code's command line. Values are attached
// with "=", so none can be read as a flag of its own, and the variadic
// tool lists cannot swallow the arguments after them.
func (f promptFlags) args() []string {
	var a []string
	if f.maxTurns > 0 {
		a = append(a, "--max-turns", strconv.Itoa(f.maxTurns))
	}
	if len(f.allowed) > 0 {
		a = append(a, "--allowedTools="+strings.Join(f.allowed, ","))
	}
	if len(f.denied) > 0 {
		a = append(a, "--disallowedTools="+strings.Join(f.denied, ","))
	}
	if f.schema != "" {
		a = append(a, "--json-schema="+f.schema)
	}
	return a
}

// key identifies the set: processes with equal keys take the same prompts.
func (f promptFlags) key() string {
	return strings.Join(f.args(), "\x00")
}

// refusals say why Claude Code refuses a prompt setting: it honours every
// prompt setting, so none is listed.
var refusals = map[string]string{}

// slashSettings are the prompt settings a slash command takes: the ones
// that are the CLI's flags, which apply to whatever the command runs.
var slashSettings = []string{adapter.SettingJSONSchema, adapter.SettingMaxTurns, adapter.SettingAllowedTools, adapter.SettingDeniedTools}

// slashRefusal says why a slash command takes no attached files: the
// prompt would go as content blocks, and Claude Code runs a command only
// from a prompt of plain text.
const slashRefusal = "Claude Code runs a slash command from plain text, which cannot carry attached files"

// promptDeny is a prompt's denied_tools as ferry's PreToolUse hook applies
// them, on top of Claude Code's --disallowedTools: rules ferry's permission
// package reads (Bash(rm:*), Edit(secrets/**), …) are decided as for
// ferry's own agent; any rule, also of a tool only Claude Code knows
// (WebFetch, Task), denies a call of that tool name when it names the tool
// alone.
type promptDeny struct {
	rules *permission.Rules
	names map[string]bool
}

// denyOf reads the denied rules of a prompt in workspace ws (nil: none).
func denyOf(rules []string, ws string) *promptDeny {
	if len(rules) == 0 {
		return nil
	}
	d := &promptDeny{rules: &permission.Rules{Workspace: ws}, names: map[string]bool{}}
	for _, r := range rules {
		if r = strings.TrimSpace(r); !strings.Contains(r, "(") {
			d.names[r] = true
		}
		if rule, err := permission.Parse(r); err == nil {
			d.rules.Deny = append(d.rules.Deny, rule)
		}
	}
	return d
}

// denies reports whether the prompt's denied rules refuse c.
func (d *promptDeny) denies(c permission.Call) bool {
	if d == nil {
		return false
	}
	if d.names[c.Tool] {
		return true
	}
	return len(d.rules.Deny) > 0 && d.rules.Decide(c) == permission.Deny
}

// badRule is the agent.error (bad_request) refusing a prompt with a rule
// no command line can carry (NUL, a line break), naming it; nil if none.
// Dropping it would silently ignore a denied tool.
func badRule(req *protocol.PromptRequest) *protocol.AgentError {
	if req == nil || req.ConfigOverrides == nil {
		return nil
	}
	for _, l := range []struct {
		name  string
		rules []string
	}{{"allowed_tools", req.ConfigOverrides.AllowedTools}, {"denied_tools", req.ConfigOverrides.DeniedTools}} {
		for i, r := range l.rules {
			if strings.ContainsAny(r, "\x00\r\n") {
				return &protocol.AgentError{Code: protocol.AgentCodeBadRequest, Message: fmt.Sprintf("config_overrides.%s[%d]: a permission rule holds no line break or NUL", l.name, i)}
			}
		}
	}
	return nil
}
