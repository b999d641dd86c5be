package protocol

import "reflect"

// TypeInstructions is agent.instructions: the instruction files (AGENTS.md,
// CLAUDE.md, the user's own) the agent has in its system prompt, sent by
// the client when a session opens and whenever the set changes, so a UI
// can name them in the session's info. The latest list is in force; the
// master keeps it in the session's snapshot.
const TypeInstructions = "agent.instructions"

func init() {
	registry[TypeInstructions] = spec{reflect.TypeFor[AgentInstructions](), RoleClient, true, false, "the instruction files in the agent's system prompt"}
}

// MaxInstructionFiles bounds agent.instructions.
const MaxInstructionFiles = 64

// AgentInstructions is agent.instructions.
type AgentInstructions struct {
	// Files are the instruction files, outermost first (the user's, then the
	// repository root's, down to the workspace's); empty when there are none.
	Files []InstructionFile `json:"files" jsonschema:"maxItems=64"`
}

// InstructionFile is one instruction file in the agent's system prompt.
type InstructionFile struct {
	// Path is the file's absolute path on the client's machine.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes" jsonschema:"minimum=0"`
	// Truncated is true when only a part of the file fits the size cap
	// of the instructions (the prompt says where it was cut).
	Truncated bool `json:"truncated,omitempty"`
}
