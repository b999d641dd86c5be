package client

import (
	"reflect"
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

// instructionsChanged sends the instruction files in the agent's system
// prompt as agent.instructions (adapter.SessionConfig.Instructions), at
// most MaxInstructionFiles, when they differ from the last list sent.
func (s *session) instructionsChanged(files []protocol.InstructionFile) {
	files = slices.Clone(files[:min(len(files), protocol.MaxInstructionFiles)])
	if files == nil {
		files = []protocol.InstructionFile{}
	}
	s.mu.Lock()
	same := s.instructionsSent && slices.Equal(s.instructions, files)
	s.instructions, s.instructionsSent = files, true
	s.mu.Unlock()
	if same {
		return
	}
	m := protocol.New(protocol.TypeInstructions, &protocol.AgentInstructions{Files: files})
	m.SessionID = s.id
	if err := s.c.emit(s.c.stop, m); err != nil {
		s.c.log.Warn("agent.instructions not sent", "session", s.id, "err", err)
	}
}

// capabilities is the session's capability in force: what its agent
// reported (agent.capabilities), else its adapter's declaration.
func (s *session) capabilities() protocol.AdapterCapability {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caps != nil {
		return *s.caps
	}
	return s.c.adCaps[s.adapterID]
}

// capabilitiesChanged takes the session's own capability from its adapter
// (adapter.SessionConfig.Capabilities): the session is held to it from now
// on, and it is sent as agent.capabilities when it differs from the last
// one sent. Its id is the session's adapter, whatever the adapter said.
func (s *session) capabilitiesChanged(ac protocol.AdapterCapability) {
	ac.ID = s.adapterID
	s.mu.Lock()
	same := s.caps != nil && reflect.DeepEqual(*s.caps, ac)
	s.caps = &ac
	s.mu.Unlock()
	if same {
		return
	}
	m := protocol.New(protocol.TypeAgentCapabilities, &protocol.AgentCapabilities{Adapter: ac})
	m.SessionID = s.id
	if err := s.c.emit(s.c.stop, m); err != nil {
		s.c.log.Warn("agent.capabilities not sent", "session", s.id, "err", err)
	}
}

// titleChanged sends a title the agent made as agent.title
// (adapter.SessionConfig.Title), cleaned to one line, when it differs from
// the last one sent.
func (s *session) titleChanged(title string) {
	title = protocol.AgentTitleText(title)
	s.mu.Lock()
	same := title == "" || title == s.titleSent
	if !same {
		s.titleSent = title
	}
	s.mu.Unlock()
	if same {
		return
	}
	m := protocol.New(protocol.TypeAgentTitle, &protocol.AgentTitle{Title: title})
	m.SessionID = s.id
	if err := s.c.emit(s.c.stop, m); err != nil {
		s.c.log.Warn("agent.title not sent", "session", s.id, "err", err)
	}
}
