package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/protocol"
)

// Bounds of the title request: one per session, beside its turns.
const (
	// titleMaxInput bounds the description sent (the first prompt).
	titleMaxInput = 4 << 10
)

// titleTimeout bounds the wait for Claude Code's title (a variable so
// that the package's tests can shorten it).
var titleTimeout = 30 * time.Second

// titleRequest is the Agent SDK's generate_session_title control request:
// Claude Code asks its model for a title of description. persist false
// keeps the title out of Claude Code's own session list: ferry keeps it.
type titleRequest struct {
	Subtype     string `json:"subtype"`
	Description string `json:"description"`
	Persist     bool   `json:"persist"`
}

// titleResponse is its answer: null when Claude Code's model call failed
// or made nothing usable (Claude Code logs why in its own debug log).
type titleResponse struct {
	Title *string `json:"title"`
}

// titleInput reports whether a turn's prompt says what the session is
// about: typed or piped text, not one of Claude Code's slash commands nor
// a request to continue.
func titleInput(req *protocol.PromptRequest) bool {
	switch adapter.InputTypeOf(req) {
	case protocol.InputText, protocol.InputPipedStdin:
		return true
	}
	return false
}

// notePrompt keeps the session's first prompt that says what it is about,
// for its title.
func (s *session) notePrompt(turn adapter.Turn) {
	if s.onTitle == nil || !titleInput(turn.Request) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.titlePrompt == "" {
		s.titlePrompt = runecut.Prefix(strings.TrimSpace(turn.Prompt.Literal()), titleMaxInput)
	}
}

// askTitle asks p, once per session, for a title of the session's first
// prompt after the first turn that ended with an answer, and hands it to
// onTitle (the client sends agent.title; the master keeps a title a person
// set). It runs beside the session's next turns, bounded by titleTimeout
// and ended by the process's end (Close waits for it): a failure, a null
// title or a slow answer costs only the title, and the log says why.
func (s *session) askTitle(p *proc) {
	s.mu.Lock()
	desc := s.titlePrompt
	if s.onTitle == nil || desc == "" || s.titled || s.closed {
		s.mu.Unlock()
		return
	}
	s.titled = true
	s.wg.Add(1) // under mu: Close, which sets closed under mu, waits after
	s.mu.Unlock()
	timeout := titleTimeout
	go func() {
		defer s.wg.Done()
		title, err := requestTitle(p, desc, timeout)
		switch {
		case err != nil:
			s.log.Info("no title from Claude Code", "err", err)
		case title == "":
			s.log.Info("no title from Claude Code: its model made none (Claude Code's debug log says why)")
		case s.isClosed():
		default:
			s.onTitle(title)
		}
	}()
}

// requestTitle sends generate_session_title and waits, at most timeout,
// for the title ("" for none).
func requestTitle(p *proc, desc string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	raw, err := p.request(ctx, titleRequest{Subtype: "generate_session_title", Description: desc, Persist: false})
	if errors.Is(err, context.DeadlineExceeded) {
		return "", errors.New("claudecode: Claude Code did not answer the title request within " + timeout.String())
	}
	if err != nil {
		return "", err
	}
	var r titleResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", errors.New("claudecode: malformed title response: " + runecut.Ellipsis(string(raw), 200))
	}
	if r.Title == nil {
		return "", nil
	}
	return strings.TrimSpace(*r.Title), nil
}
