package protocol

import (
	"reflect"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// TypeCommands is agent.commands: the agent's own slash commands, sent by
// the client whenever the agent reports them (an ACP agent's
// available_commands_update, Claude Code's init), so a UI accepts and
// completes them besides ferry's own. The latest list is in force; the
// master keeps it in the session's snapshot.
const TypeCommands = "agent.commands"

func init() {
	registry[TypeCommands] = spec{reflect.TypeFor[AgentCommands](), RoleClient, true, false, "the agent's own slash commands, as it last reported them"}
}

// AgentCommands is agent.commands.
type AgentCommands struct {
	// Commands are the agent's slash commands, without their slash.
	Commands []AgentCommand `json:"commands" jsonschema:"maxItems=256"`
}

// AgentCommand is one slash command of an agent.
type AgentCommand struct {
	// Name is the command without its slash, e.g. "review" or "plugin:cmd".
	Name string `json:"name" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Za-z0-9][A-Za-z0-9_:.-]*$"`
	// Description says what it does, where the agent says.
	Description string `json:"description,omitempty" jsonschema:"maxLength=1024"`
	// Hint describes its argument, where the agent says.
	Hint string `json:"hint,omitempty" jsonschema:"maxLength=256"`
}

// MaxCommands bounds agent.commands.
const MaxCommands = 256

var commandName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_:.-]*$`)

// ValidCommandName reports whether name can be an AgentCommand's name:
// at most 64 bytes of the pattern its schema states.
func ValidCommandName(name string) bool {
	return len(name) <= 64 && commandName.MatchString(name)
}

// CleanCommands is what of an agent's report agent.commands can carry:
// commands with a valid name (at most 64 bytes), each name once, the
// descriptions and hints cut to their bounds, at most MaxCommands.
func CleanCommands(in []AgentCommand) []AgentCommand {
	out := make([]AgentCommand, 0, min(len(in), MaxCommands))
	seen := map[string]bool{}
	for _, c := range in {
		if !ValidCommandName(c.Name) || seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		c.Description, c.Hint = cutUTF8(c.Description, 1024), cutUTF8(c.Hint, 256)
		out = append(out, c)
		if len(out) == MaxCommands {
			break
		}
	}
	return out
}

// cutUTF8 cuts s to at most n bytes, on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
