package client

import (
	"slices"

	"github.com/ferry-dev/ferry/protocol"
)

// commandsChanged sends the agent's own slash commands as agent.commands
// (adapter.SessionConfig.Commands), cleaned to what the message can carry,
// when they differ from the last list sent.
func (s *session) commandsChanged(cmds []protocol.AgentCommand) {
	cmds = protocol.CleanCommands(cmds)
	s.mu.Lock()
	same := s.commandsSent && slices.Equal(s.commands, cmds)
	s.commands, s.commandsSent = cmds, true
	s.mu.Unlock()
	if same {
		return
	}
	m := protocol.New(protocol.TypeCommands, &protocol.AgentCommands{Commands: cmds})
	m.SessionID = s.id
	if err := s.c.emit(s.c.stop, m); err != nil {
		s.c.log.Warn("agent.commands not sent", "session", s.id, "err", err)
	}
}
