package client

import (
	"context"
	"strings"

	"github.com/ferry-dev/ferry/protocol"
)

// proposeMessage and ship wait for package internal/ship (helper I).
func proposeMessage(prompts []string, answer string) string {
	if len(prompts) == 0 {
		return ""
	}
	return strings.TrimSpace(prompts[0]) + "\n\n" + answer
}

func (s *session) ship(_ context.Context, m *protocol.Message, _ *protocol.WorktreeShip) {
	s.fail(m, protocol.CodeUnsupported, "type", "ship is not built yet")
}
