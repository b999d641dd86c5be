// Package framing gives a prompt's input type its meaning for agents that
// take plain text (Claude Code, ACP agents), the way ferry's own agent
// reads it: piped standard input is material the user piped in, framed as
// such (agent.FramePipedStdin), not the instruction; a continuation asks
// the agent to go on where it stopped; text and slash commands go as typed.
package framing

import (
	"strings"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/protocol"
)

// ContinueText is what an empty continuation (or "continue") asks.
const ContinueText = "Continue where you left off."

// Prompt is the text an agent gets for a prompt of inputType whose text
// (file tokens already converted) is text.
func Prompt(inputType, text string) string {
	switch inputType {
	case protocol.InputPipedStdin:
		return agent.FramePipedStdin(text) + "\n\nDo what it asks, or, if it is material rather than a request, summarise it."
	case protocol.InputContinuation:
		if s := strings.TrimSpace(text); s == "" || strings.EqualFold(s, "continue") {
			return ContinueText
		}
	}
	return text
}
