// Package echo is a small, real adapter that needs no model: it answers a
// prompt by echoing it, word by word, so the whole live path (prompt →
// adapter → events → UI, cancel, interaction, mode, compact) can be used and
// tested before an agent runtime is wired in.
//
// Behaviour, by the start of the prompt as the user saw it (its file tokens
// written as their display paths, fileref.Prompt.Literal):
//
//   - anything else: the reply is "echo: " followed by the prompt, streamed
//     as agent.text.delta, one word (with the spaces before it) per delta,
//     Delay apart (default 20 ms);
//   - "ask:": first an agent.interaction.request of kind permission
//     (options allow_once and deny); the reply is "allowed" or "denied"
//     (a timeout is a denial);
//   - "fail:": Run returns an error (the client ends the turn with
//     stop_reason error);
//   - "tool:write": a pretend Write of the first referenced file, refused
//     (status denied) in plan and review mode; in default mode it is a dry
//     run: echo never changes a file;
//   - "tool:": a Read of the first referenced file, really read through a
//     vfs confined to the workspace; agent.tool.finished reports its size.
//
// Compact reports tokens before and after from the words the session has
// seen (prompts and replies): after is before times the target ratio
// (default 0.25). A cancelled turn stops within one Delay.
//
// Of the prompt settings echo honours output_format (ferry renders it) and
// refuses the others before it answers, with agent.error unsupported naming
// the setting (adapter.CheckPrompt); it takes text input only, and a mode
// switch's config is refused.
package echo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// ID is the adapter's id in session.capabilities.
const ID = "echo"

// DefaultDelay is the pause between two streamed words.
const DefaultDelay = 20 * time.Millisecond

// defaultRatio is the compaction ratio when the request names none.
const defaultRatio = 0.25

// Option configures the adapter.
type Option func(*Adapter)

// WithDelay sets the pause between two streamed words (0: none).
func WithDelay(d time.Duration) Option {
	return func(a *Adapter) {
		if d >= 0 {
			a.delay = d
		}
	}
}

// Adapter opens echo sessions.
type Adapter struct {
	delay time.Duration
}

// New returns the echo adapter.
func New(opts ...Option) *Adapter {
	a := &Adapter{delay: DefaultDelay}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Capability declares what echo supports.
func (a *Adapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{
		ID:           ID,
		Name:         "Echo (demo, no model)",
		Modes:        []string{protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview},
		InputTypes:   []string{protocol.InputText},
		Tools:        []string{"Read", "Write"},
		Interactions: []string{protocol.InteractionPermission},
		Cancel:       true,
		Compact:      true,
		FileTokens:   "literal",
		Settings:     []string{adapter.SettingOutputFormat, adapter.SettingTargetTokenRatio},
	}
}

// Open starts a session on the workspace.
func (a *Adapter) Open(_ context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	fsys, err := vfs.NewLocal(cfg.Workspace.Path)
	if err != nil {
		return nil, fmt.Errorf("echo: open session: %w", err)
	}
	mode := cfg.Mode
	if mode == "" {
		mode = protocol.ModeDefault
	}
	return &session{caps: a.Capability(), delay: a.delay, fs: fsys, mode: mode, pending: map[string]chan *protocol.InteractionResponse{}}, nil
}

type session struct {
	caps  protocol.AdapterCapability
	delay time.Duration
	fs    *vfs.Local

	mu      sync.Mutex
	mode    string
	words   int64
	pending map[string]chan *protocol.InteractionResponse
}

// Run answers one prompt (see the package doc).
func (s *session) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	if res, refused, err := adapter.RefusePrompt(ctx, s.caps, turn, emit, nil); refused {
		return res, err
	}
	lit := turn.Prompt.Literal()
	s.count(lit)
	reply := "echo: " + lit
	switch {
	case strings.HasPrefix(lit, "fail:"):
		return adapter.Result{StopReason: protocol.StopError}, errors.New("echo: the prompt asked to fail")
	case strings.HasPrefix(lit, "ask:"):
		allowed, err := s.ask(ctx, turn.ID, emit)
		if err != nil {
			return adapter.Result{}, err
		}
		reply = "denied"
		if allowed {
			reply = "allowed"
		}
	case strings.HasPrefix(lit, "tool:write"):
		if err := s.pretendWrite(ctx, turn, emit); err != nil {
			return adapter.Result{}, err
		}
	case strings.HasPrefix(lit, "tool:"):
		if err := s.read(ctx, turn, emit); err != nil {
			return adapter.Result{}, err
		}
	}
	sent, err := s.stream(ctx, turn.ID, reply, emit)
	s.count(sent)
	if err != nil {
		return adapter.Result{Text: sent}, err
	}
	return adapter.Result{Text: reply, StopReason: protocol.StopEndTurn}, nil
}

// stream sends reply one word at a time and returns what it sent.
func (s *session) stream(ctx context.Context, turnID, reply string, emit adapter.Emit) (string, error) {
	var sent strings.Builder
	for i, w := range words(reply) {
		if i > 0 && s.delay > 0 {
			t := time.NewTimer(s.delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return sent.String(), ctx.Err()
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			return sent.String(), err
		}
		if err := emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: turnID, Delta: w, Channel: "text"}); err != nil {
			return sent.String(), err
		}
		sent.WriteString(w)
	}
	return sent.String(), nil
}

// words splits s into pieces that concatenate back to s: each word with
// the white space before it (trailing space goes with the last word).
func words(s string) []string {
	var out []string
	start := 0
	inWord := false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if !space {
			inWord = true
			continue
		}
		if inWord {
			// The first space after a word ends it; keep the space for
			// the next piece.
			out = append(out, s[start:i])
			start = i
			inWord = false
		}
	}
	if start < len(s) {
		if !inWord && len(out) > 0 {
			out[len(out)-1] += s[start:]
		} else {
			out = append(out, s[start:])
		}
	}
	return out
}

// ask sends a permission request and waits for its answer.
func (s *session) ask(ctx context.Context, turnID string, emit adapter.Emit) (bool, error) {
	id := protocol.NewID()
	ch := make(chan *protocol.InteractionResponse, 1)
	s.mu.Lock()
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	err := emit(ctx, protocol.TypeInteractionRequest, &protocol.InteractionRequest{
		InteractionID: id,
		TurnID:        turnID,
		Kind:          protocol.InteractionPermission,
		Title:         "Echo asks for permission",
		Message:       "May echo answer this prompt?",
		Options: []protocol.Option{
			{Value: protocol.AllowOnce, Label: "Allow once"},
			{Value: protocol.Deny, Label: "Deny"},
		},
	})
	if err != nil {
		return false, err
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case r := <-ch:
		if r == nil { // timed out: a denial
			return false, nil
		}
		return slices.Contains(r.SelectedValue.Values, protocol.AllowOnce) || slices.Contains(r.SelectedValue.Values, protocol.AllowAlways), nil
	}
}

// Answer delivers the answer to an open interaction (nil: timed out).
func (s *session) Answer(interactionID string, resp *protocol.InteractionResponse) error {
	s.mu.Lock()
	ch, ok := s.pending[interactionID]
	delete(s.pending, interactionID)
	s.mu.Unlock()
	if !ok {
		return adapter.ErrUnknownInteraction
	}
	ch <- resp // buffered, and each channel gets one answer
	return nil
}

// read is the "tool:" variant: a real Read of the first referenced file.
func (s *session) read(ctx context.Context, turn adapter.Turn, emit adapter.Emit) error {
	path, useID, err := s.toolStart(ctx, turn, "Read", emit)
	if err != nil || path == "" {
		return err
	}
	fin := &protocol.ToolFinished{TurnID: turn.ID, ToolUseID: useID, ToolName: "Read", Status: protocol.ToolOK}
	n, rerr := s.readAll(path)
	if rerr != nil {
		fin.Status = protocol.ToolError
		fin.Output = fmt.Sprintf("cannot read %s: %s", path, reason(rerr))
	} else {
		fin.Output = fmt.Sprintf("read %d bytes from %s", n, path)
	}
	return emit(ctx, protocol.TypeToolFinished, fin)
}

func (s *session) readAll(path string) (int64, error) {
	f, err := s.fs.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	n, err := io.Copy(io.Discard, f)
	if err != nil {
		return n, fmt.Errorf("echo: read %s: %w", path, err)
	}
	return n, nil
}

// pretendWrite is the "tool:write" variant: refused in plan and review
// mode, a dry run otherwise.
func (s *session) pretendWrite(ctx context.Context, turn adapter.Turn, emit adapter.Emit) error {
	path, useID, err := s.toolStart(ctx, turn, "Write", emit)
	if err != nil || path == "" {
		return err
	}
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	fin := &protocol.ToolFinished{TurnID: turn.ID, ToolUseID: useID, ToolName: "Write", Status: protocol.ToolOK,
		Output: "dry run: echo never changes files"}
	if mode != protocol.ModeDefault {
		fin.Status = protocol.ToolDenied
		fin.Output = fmt.Sprintf("Write is refused in %s mode", mode)
	}
	return emit(ctx, protocol.TypeToolFinished, fin)
}

// toolStart emits agent.tool.started for the first referenced file. With
// no file it also finishes the call with an error and returns path "".
func (s *session) toolStart(ctx context.Context, turn adapter.Turn, tool string, emit adapter.Emit) (path, useID string, err error) {
	useID = protocol.NewID()
	files := turn.Prompt.Files()
	if len(files) > 0 {
		path = files[0].Path
	}
	input, _ := json.Marshal(map[string]string{"file_path": path}) // a map of strings always encodes
	if err := emit(ctx, protocol.TypeToolStarted, &protocol.ToolStarted{TurnID: turn.ID, ToolUseID: useID, ToolName: tool, Input: input}); err != nil {
		return "", "", err
	}
	if path == "" {
		return "", useID, emit(ctx, protocol.TypeToolFinished, &protocol.ToolFinished{
			TurnID: turn.ID, ToolUseID: useID, ToolName: tool, Status: protocol.ToolError, Output: "the prompt references no file",
		})
	}
	return path, useID, nil
}

// reason says why a file could not be read, without internal detail.
func reason(err error) string {
	switch {
	case errors.Is(err, vfs.ErrOutside):
		return "it is outside the workspace"
	case errors.Is(err, vfs.ErrNotExist):
		return "no such file"
	case errors.Is(err, vfs.ErrIsDir):
		return "it is a directory"
	case errors.Is(err, vfs.ErrNotRegular):
		return "not a regular file"
	case errors.Is(err, vfs.ErrPermission):
		return "permission denied"
	}
	return "read error"
}

// SetMode records the mode; it applies to the next tool call. A config is
// refused: echo's modes have no settings.
func (s *session) SetMode(mode string, config json.RawMessage) error {
	switch mode {
	case protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview:
	default:
		return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.mode", Message: "echo has no such mode"}
	}
	if err := adapter.CheckModeConfig(s.caps, config); err != nil {
		return err
	}
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	return nil
}

// Compact shrinks the word count by the target ratio.
func (s *session) Compact(_ context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	ratio := defaultRatio
	if req != nil && req.TargetTokenRatio != nil {
		ratio = *req.TargetTokenRatio
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.words
	after := int64(float64(before) * ratio)
	s.words = after
	return &protocol.CompactionDone{TokensBefore: before, TokensAfter: after}, nil
}

func (s *session) count(text string) {
	n := int64(len(strings.Fields(text)))
	s.mu.Lock()
	s.words += n
	s.mu.Unlock()
}

// Close releases the workspace.
func (s *session) Close() error {
	if err := s.fs.Close(); err != nil {
		return fmt.Errorf("echo: close session: %w", err)
	}
	return nil
}
