// Package adaptertest is the conformance suite every adapter passes: Run
// drives one adapter (a Fixture) through the contract of package adapter
// and fails the test where it breaks it.
//
// What Run checks, in one session of the adapter:
//
//   - Every prompt setting (adapter.PromptSettings), compaction's
//     target_token_ratio and mode.switch's config is either declared in the
//     capability's Settings and honoured — its observable effect checked by
//     the fixture's Effects, or by the test its ProvedBy names, which must
//     exist — or refused: the turn emits exactly one agent.error, code
//     unsupported, naming the field, and nothing else; Compact and SetMode
//     return a *protocol.Error, code unsupported, on the field.
//   - context_files (adapter.Turn.Attachments, an image and a text file):
//     an adapter that declares it must show, in its Effect, that both reach
//     the agent; one that does not refuses the turn as above.
//   - Every input type of the spec likewise, against the capability's
//     InputTypes.
//   - A slash_command prompt carrying a declared prompt setting (bar
//     output_format) is refused like an undeclared one, unless the
//     fixture names a test showing the command honours it
//     (SlashProvedBy): no setting is dropped on a command's path.
//   - Cancel: Run returns within CancelBound of the turn's context being
//     cancelled, and the adapter emits nothing after Run returned.
//   - The capability never over-claims: every mode it declares switches
//     (SetMode succeeds) and a declared compaction runs. A
//     session that reports its own capability (SessionConfig.Capabilities)
//     is held to that one instead of the adapter's.
//   - Answer with an unknown interaction id fails with
//     adapter.ErrUnknownInteraction; SetMode with a mode that does not
//     exist fails with a coded *protocol.Error.
//   - Close twice returns nil both times, and no process the session
//     started (a descendant of the test process, from /proc) is left
//     running once Close returned (within ProcessBound).
//
// Run returns the row of the conformance table (setting or input type →
// honoured or refused); CheckTable compares it with the table in
// docs/adapters.md, or rewrites that row with -update.
package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// Bounds of the suite.
const (
	// CancelBound is how soon Run must return after its context is
	// cancelled (the contract asks for a few hundred milliseconds; the
	// bound leaves room for a loaded machine).
	CancelBound = 2 * time.Second
	// TurnBound is how long a turn that is not cancelled may take.
	TurnBound = 90 * time.Second
	// ProcessBound is how long the session's processes may take to go
	// after Close returned (Close kills after its own grace period).
	ProcessBound = 10 * time.Second
)

// Honoured and Refused are the cells of the conformance table.
const (
	Honoured = "honoured"
	Refused  = "refused"
)

// InputTypes are the input types of control.prompt.request (§6.1.1).
var InputTypes = []string{protocol.InputText, protocol.InputSlashCommand, protocol.InputContinuation, protocol.InputPipedStdin}

// Columns are the conformance table's columns after the adapter's name.
var Columns = append(slices.Clone(adapter.AllSettings), InputTypes...)

// Effect checks the observable effect of one honoured setting or input
// type in the open session s (it runs its own turns, e.g. with RunTurn).
type Effect func(t *testing.T, s adapter.Session)

// Fixture is one adapter as the suite drives it.
type Fixture struct {
	// Name is the adapter's row in the conformance table.
	Name string
	// Adapter is the adapter under test.
	Adapter adapter.Adapter
	// Workspace is the session's workspace (absolute); "" is a new
	// temporary directory.
	Workspace string
	// Answer is a prompt the agent answers in text, ending the turn.
	Answer string
	// Slash is the text of a slash_command prompt the agent answers
	// ("" : Answer).
	Slash string
	// Hang is a prompt the agent works on until it is cancelled.
	Hang string
	// Effects check the effect of honoured settings and input types, by
	// column name.
	Effects map[string]Effect
	// ProvedBy names, by column, a test of the adapter's package that
	// checks the effect where no Effect does (real agents, whose effects
	// are slow to script twice). The suite checks that it exists.
	ProvedBy map[string]string
	// SlashProvedBy names, by prompt setting, a test of the adapter's
	// package showing that a slash_command prompt honours that setting
	// too. A setting the capability declares and this does not name must
	// be refused on a slash_command prompt (one agent.error unsupported
	// naming it): a slash command is often run on a path of its own, and
	// a setting must not be dropped there.
	SlashProvedBy map[string]string
}

// Event is one event an adapter emitted.
type Event struct {
	Type    string
	Payload any
}

// Outcome is how one turn went.
type Outcome struct {
	Events []Event
	Result adapter.Result
	Err    error
	// Late are events emitted after Run returned.
	Late func() []Event
}

// Errors are the turn's agent.error payloads.
func (o Outcome) Errors() []*protocol.AgentError {
	var out []*protocol.AgentError
	for _, e := range o.Events {
		if ae, ok := e.Payload.(*protocol.AgentError); ok {
			out = append(out, ae)
		}
	}
	return out
}

// Text is the turn's streamed text (channel text).
func (o Outcome) Text() string {
	var b strings.Builder
	for _, e := range o.Events {
		if d, ok := e.Payload.(*protocol.TextDelta); ok && d.Channel != "thinking" {
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

// recorder collects a turn's events and those after its end.
type recorder struct {
	mu    sync.Mutex
	evs   []Event
	ended bool
	late  []Event
}

func (r *recorder) emit(_ context.Context, typ string, payload any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		r.late = append(r.late, Event{typ, payload})
		return errors.New("adaptertest: the turn has ended")
	}
	r.evs = append(r.evs, Event{typ, payload})
	return nil
}

func (r *recorder) end() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	return slices.Clone(r.evs)
}

func (r *recorder) lateEvents() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.late)
}

// Request is a prompt request of text (escaped, no file references).
func Request(text, inputType string) *protocol.PromptRequest {
	return &protocol.PromptRequest{PromptText: fileref.Escape(text), InputType: inputType}
}

// RunTurn runs one turn of req in s, bounded by TurnBound.
func RunTurn(t *testing.T, s adapter.Session, req *protocol.PromptRequest) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), TurnBound)
	defer cancel()
	rec := &recorder{}
	res, err := s.Run(ctx, turnOf(req), rec.emit)
	if ctx.Err() != nil {
		t.Fatalf("the turn did not end within %v", TurnBound)
	}
	return Outcome{Events: rec.end(), Result: res, Err: err, Late: rec.lateEvents}
}

func turnOf(req *protocol.PromptRequest) adapter.Turn {
	return adapter.Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(req.PromptText, req.FileReferences)}
}

// AttachedPNG is the 1×1 red PNG of Attachments (valid, CRCs and all:
// a real agent may decode it).
var AttachedPNG = []byte("\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\x0d\x49\x44\x41\x54\x78\x9c\x63\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99\x3d\x1d\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82")

// AttachedNote is the content of Attachments' text file: a test looks for
// it where the agent's input arrives.
const AttachedNote = "the attached note says: ferry-attachment-7d1e"

// Attachments are what the context_files case hands an adapter: an image
// and a text file, as the client fills adapter.Turn.Attachments.
func Attachments() []attachment.File {
	return []attachment.File{
		{Name: "shot.png", MediaType: "image/png", Data: AttachedPNG},
		{Name: "note.txt", MediaType: "text/plain", Data: []byte(AttachedNote + "\n")},
	}
}

// RunTurnWith runs one turn of req in s with files attached (and req's
// context_files naming them, as the client's request would), bounded by
// TurnBound.
func RunTurnWith(t *testing.T, s adapter.Session, req *protocol.PromptRequest, files []attachment.File) Outcome {
	t.Helper()
	req.ContextFiles = nil
	for _, f := range files {
		req.ContextFiles = append(req.ContextFiles, protocol.ContextFile{FileURL: "ferry-upload:upl_test", FileName: f.Name, MimeType: f.MediaType})
	}
	ctx, cancel := context.WithTimeout(context.Background(), TurnBound)
	defer cancel()
	rec := &recorder{}
	turn := turnOf(req)
	turn.Attachments = files
	res, err := s.Run(ctx, turn, rec.emit)
	if ctx.Err() != nil {
		t.Fatalf("the turn did not end within %v", TurnBound)
	}
	return Outcome{Events: rec.end(), Result: res, Err: err, Late: rec.lateEvents}
}

// withSetting is a request of text, of inputType, that sets one prompt
// setting to a valid value.
func withSetting(text, inputType, setting string) *protocol.PromptRequest {
	req := Request(text, inputType)
	o := &protocol.ConfigOverrides{}
	switch setting {
	case adapter.SettingOutputFormat:
		o.OutputFormat = "json"
	case adapter.SettingJSONSchema:
		o.JSONSchema = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	case adapter.SettingMaxTurns:
		n := 3
		o.MaxTurns = &n
	case adapter.SettingAllowedTools:
		o.AllowedTools = []string{"Read"}
	case adapter.SettingDeniedTools:
		o.DeniedTools = []string{"Bash"}
	case adapter.SettingContextFiles:
		req.ContextFiles = []protocol.ContextFile{{FileURL: "data:text/plain,hello", FileName: "note.txt", MimeType: "text/plain"}}
	}
	req.ConfigOverrides = o
	return req
}

// Run runs the suite on f and returns its row of the conformance table
// (column → Honoured or Refused).
func Run(t *testing.T, f Fixture) map[string]string {
	t.Helper()
	caps := f.Adapter.Capability()
	ws := f.Workspace
	if ws == "" {
		ws = t.TempDir()
	}
	before := descendants()
	ctx, cancel := context.WithTimeout(context.Background(), TurnBound)
	defer cancel()
	var (
		mu       sync.Mutex
		reported *protocol.AdapterCapability
	)
	s, err := f.Adapter.Open(ctx, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: ws}, Mode: protocol.ModeDefault,
		Capabilities: func(c protocol.AdapterCapability) {
			mu.Lock()
			reported = &c
			mu.Unlock()
		}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	// What the session's agent says it offers holds for the session, in
	// place of the adapter's declaration.
	mu.Lock()
	if reported != nil {
		if reported.ID != caps.ID {
			t.Errorf("the session reported the capability of %q, not of its adapter %q", reported.ID, caps.ID)
		}
		caps = *reported
	}
	mu.Unlock()
	checkCapability(t, f, caps)
	closed := false
	defer func() {
		if !closed {
			_ = s.Close()
		}
	}()
	row := map[string]string{}

	t.Run("answer", func(t *testing.T) {
		o := RunTurn(t, s, Request(f.Answer, protocol.InputText))
		checkAnswered(t, o)
	})
	for _, key := range adapter.PromptSettings {
		row[key] = setting(t, f, caps, s, key)
	}
	for _, it := range InputTypes {
		row[it] = inputType(t, f, caps, s, it)
	}
	if slices.Contains(caps.InputTypes, protocol.InputSlashCommand) {
		for _, key := range adapter.PromptSettings {
			if key != adapter.SettingOutputFormat && slices.Contains(caps.Settings, key) {
				slashSetting(t, f, s, key)
			}
		}
	}
	row[adapter.SettingTargetTokenRatio] = compactRatio(t, f, caps, s)
	row[adapter.SettingModeConfig] = modeConfig(t, f, caps, s)

	t.Run("declared modes switch", func(t *testing.T) {
		for _, m := range append(slices.Clone(caps.Modes), protocol.ModeDefault) {
			if err := s.SetMode(m, nil); err != nil {
				t.Errorf("SetMode(%s), a mode the capability declares: %v", m, err)
			}
		}
	})
	t.Run("bad mode", func(t *testing.T) {
		err := s.SetMode("turbo", nil)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code == "" {
			t.Errorf("SetMode(turbo) = %v, want a coded *protocol.Error", err)
		}
	})
	t.Run("unknown interaction", func(t *testing.T) {
		err := s.Answer("no-such-interaction", &protocol.InteractionResponse{InteractionID: "no-such-interaction", SelectedValue: protocol.Single("allow_once")})
		if !errors.Is(err, adapter.ErrUnknownInteraction) {
			t.Errorf("Answer(unknown id) = %v, want adapter.ErrUnknownInteraction", err)
		}
		if err := s.Answer("no-such-interaction", nil); !errors.Is(err, adapter.ErrUnknownInteraction) {
			t.Errorf("Answer(unknown id, timeout) = %v, want adapter.ErrUnknownInteraction", err)
		}
	})
	var during map[int]bool
	t.Run("cancel", func(t *testing.T) { during = checkCancel(t, f, s) })
	// Last before close: a compaction rewrites the conversation the
	// checks above run in.
	t.Run("declared compaction runs", func(t *testing.T) {
		if !caps.Compact {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), TurnBound)
		defer cancel()
		if _, err := s.Compact(ctx, &protocol.SessionCompact{}); err != nil {
			t.Errorf("Compact, which the capability declares, failed: %v", err)
		}
	})

	started := newSince(before, descendants(), during)
	t.Run("close", func(t *testing.T) {
		closed = true
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close again: %v", err)
		}
		checkGone(t, started)
	})
	return row
}

func checkCapability(t *testing.T, f Fixture, caps protocol.AdapterCapability) {
	t.Helper()
	for _, s := range caps.Settings {
		if !slices.Contains(adapter.AllSettings, s) {
			t.Errorf("capability declares setting %q, which is none of %v", s, adapter.AllSettings)
		}
	}
	for _, it := range caps.InputTypes {
		if !slices.Contains(InputTypes, it) {
			t.Errorf("capability declares input type %q, which is none of %v", it, InputTypes)
		}
	}
	if !slices.Contains(caps.InputTypes, protocol.InputText) {
		t.Errorf("capability lacks input type text")
	}
	for key, name := range f.ProvedBy {
		if !testExists(name) {
			t.Errorf("ProvedBy[%s] names %s, which is no test of this package", key, name)
		}
	}
	for key, name := range f.SlashProvedBy {
		if !testExists(name) {
			t.Errorf("SlashProvedBy[%s] names %s, which is no test of this package", key, name)
		}
	}
}

// testExists reports whether a test function name is in the package's
// test files (the working directory of go test).
func testExists(name string) bool {
	files, _ := filepath.Glob("*_test.go")
	re := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(t \*testing\.T\)`)
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // the package's own test files
		if err == nil && re.Match(b) {
			return true
		}
	}
	return false
}

// checkAnswered fails unless the turn ended normally with no agent.error
// and no event after its end.
func checkAnswered(t *testing.T, o Outcome) {
	t.Helper()
	if o.Err != nil {
		t.Errorf("Run: %v", o.Err)
	}
	if errs := o.Errors(); len(errs) > 0 {
		t.Errorf("agent.error %s: %s", errs[0].Code, errs[0].Message)
	}
	if o.Result.StopReason != "" && o.Result.StopReason != protocol.StopEndTurn {
		t.Errorf("stop reason %q, want end_turn", o.Result.StopReason)
	}
}

// checkRefused fails unless the turn was refused: one agent.error, code
// unsupported, naming field, and nothing else.
func checkRefused(t *testing.T, o Outcome, field string) {
	t.Helper()
	if o.Err != nil {
		t.Errorf("Run: %v (a refusal is reported, not failed)", o.Err)
	}
	if len(o.Events) != 1 {
		t.Errorf("refused turn emitted %d events, want one agent.error: %+v", len(o.Events), o.Events)
	}
	errs := o.Errors()
	if len(errs) != 1 || errs[0].Code != protocol.CodeUnsupported || !strings.Contains(errs[0].Message, field) {
		t.Errorf("agent.errors = %+v, want one with code unsupported naming %s", errs, field)
	}
	if o.Result.StopReason != protocol.StopError {
		t.Errorf("stop reason %q, want error", o.Result.StopReason)
	}
}

func setting(t *testing.T, f Fixture, caps protocol.AdapterCapability, s adapter.Session, key string) string {
	declared := slices.Contains(caps.Settings, key)
	t.Run("setting "+key, func(t *testing.T) {
		switch {
		case !declared && key == adapter.SettingContextFiles:
			// Refused with the files in hand, as the client gives them:
			// the agent sees none of them, and the turn says why.
			checkRefused(t, RunTurnWith(t, s, Request(f.Answer, protocol.InputText), Attachments()), adapter.FieldOf(key))
		case !declared:
			checkRefused(t, RunTurn(t, s, withSetting(f.Answer, protocol.InputText, key)), adapter.FieldOf(key))
		case key == adapter.SettingContextFiles && f.Effects[key] == nil:
			t.Errorf("%s is declared honoured, but the fixture has no Effect showing Attachments reach the agent", key)
		case f.Effects[key] != nil:
			f.Effects[key](t, s)
		case key == adapter.SettingOutputFormat:
			// ferry renders it from the events: the turn runs as any.
			checkAnswered(t, RunTurn(t, s, withSetting(f.Answer, protocol.InputText, key)))
		case f.ProvedBy[key] == "":
			t.Errorf("%s is declared honoured, but the fixture checks no effect (Effects or ProvedBy)", key)
		}
	})
	return cell(declared)
}

func inputType(t *testing.T, f Fixture, caps protocol.AdapterCapability, s adapter.Session, it string) string {
	declared := slices.Contains(caps.InputTypes, it)
	t.Run("input "+it, func(t *testing.T) {
		text := f.Answer
		if it == protocol.InputSlashCommand && f.Slash != "" {
			text = f.Slash
		}
		switch {
		case !declared:
			o := RunTurn(t, s, Request(text, it))
			checkRefused(t, o, "payload.input_type")
			if errs := o.Errors(); len(errs) == 1 && !strings.Contains(errs[0].Message, it) {
				t.Errorf("the refusal does not name %s: %s", it, errs[0].Message)
			}
		case f.Effects[it] != nil:
			f.Effects[it](t, s)
		case it == protocol.InputText:
			checkAnswered(t, RunTurn(t, s, Request(text, it)))
		case f.ProvedBy[it] == "":
			t.Errorf("input type %s is declared, but the fixture checks no effect (Effects or ProvedBy)", it)
		}
	})
	return cell(declared)
}

// slashSetting checks a declared prompt setting on a slash_command
// prompt: honoured where the fixture names a test that shows it
// (SlashProvedBy), else refused.
func slashSetting(t *testing.T, f Fixture, s adapter.Session, key string) {
	t.Run("slash_command with "+key, func(t *testing.T) {
		if f.SlashProvedBy[key] != "" {
			return // checkCapability checked that the test exists
		}
		text := f.Slash
		if text == "" {
			text = f.Answer
		}
		var o Outcome
		if key == adapter.SettingContextFiles {
			o = RunTurnWith(t, s, Request(text, protocol.InputSlashCommand), Attachments())
		} else {
			o = RunTurn(t, s, withSetting(text, protocol.InputSlashCommand, key))
		}
		if len(o.Errors()) == 0 {
			t.Errorf("a slash_command prompt with %s ran without it being refused, and no test shows it honoured (SlashProvedBy): the setting was dropped", key)
			return
		}
		checkRefused(t, o, adapter.FieldOf(key))
	})
}

func compactRatio(t *testing.T, f Fixture, caps protocol.AdapterCapability, s adapter.Session) string {
	key := adapter.SettingTargetTokenRatio
	declared := caps.Compact && slices.Contains(caps.Settings, key)
	t.Run("setting "+key, func(t *testing.T) {
		if declared {
			if e := f.Effects[key]; e != nil {
				e(t, s)
			} else if f.ProvedBy[key] == "" {
				t.Errorf("%s is declared honoured, but the fixture checks no effect (Effects or ProvedBy)", key)
			}
			return
		}
		ratio := 0.5
		ctx, cancel := context.WithTimeout(context.Background(), TurnBound)
		defer cancel()
		_, err := s.Compact(ctx, &protocol.SessionCompact{TargetTokenRatio: &ratio})
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported {
			t.Fatalf("Compact with a ratio = %v, want a *protocol.Error with code unsupported", err)
		}
		if caps.Compact && pe.Field != adapter.FieldOf(key) {
			t.Errorf("Compact refused on field %q, want %s", pe.Field, adapter.FieldOf(key))
		}
	})
	return cell(declared)
}

func modeConfig(t *testing.T, f Fixture, caps protocol.AdapterCapability, s adapter.Session) string {
	key := adapter.SettingModeConfig
	declared := slices.Contains(caps.Settings, key)
	t.Run("setting "+key, func(t *testing.T) {
		if declared {
			if e := f.Effects[key]; e != nil {
				e(t, s)
			} else if f.ProvedBy[key] == "" {
				t.Errorf("%s is declared honoured, but the fixture checks no effect (Effects or ProvedBy)", key)
			}
			return
		}
		err := s.SetMode(protocol.ModeDefault, json.RawMessage(`{"max_steps":3}`))
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeUnsupported || pe.Field != adapter.FieldOf(key) {
			t.Errorf("SetMode(default, config) = %v, want a *protocol.Error unsupported on %s", err, adapter.FieldOf(key))
		}
		// An empty config asks nothing (the switch itself may still fail,
		// for an agent that offers no modes to switch between).
		if err := s.SetMode(protocol.ModeDefault, json.RawMessage(`{}`)); errors.As(err, &pe) && pe.Field == adapter.FieldOf(key) {
			t.Errorf("SetMode(default, {}) = %v", err)
		}
	})
	return cell(declared)
}

func cell(declared bool) string {
	if declared {
		return Honoured
	}
	return Refused
}

// checkCancel runs f.Hang, cancels it once it emitted an event (or after
// 500 ms), and checks that Run returns within CancelBound and that nothing
// is emitted after.
// It returns the processes below the test process while the prompt ran.
func checkCancel(t *testing.T, f Fixture, s adapter.Session) (during map[int]bool) {
	t.Helper()
	rec := &recorder{}
	first := make(chan struct{})
	var once sync.Once
	emit := func(ctx context.Context, typ string, payload any) error {
		err := rec.emit(ctx, typ, payload)
		once.Do(func() { close(first) })
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res adapter.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := s.Run(ctx, turnOf(Request(f.Hang, protocol.InputText)), emit)
		done <- ran{res, err}
	}()
	select {
	case <-first:
	case <-time.After(500 * time.Millisecond):
	case r := <-done:
		t.Fatalf("the hanging prompt ended by itself: %+v, %v", r.res, r.err)
	}
	during = descendants()
	cancel()
	at := time.Now()
	select {
	case r := <-done:
		took := time.Since(at)
		t.Logf("Run returned %v after the cancel (stop reason %q)", took.Round(time.Millisecond), r.res.StopReason)
		if r.res.StopReason != "" && r.res.StopReason != protocol.StopCancelled {
			t.Errorf("stop reason %q after a cancel, want cancelled (or empty: the client says cancelled)", r.res.StopReason)
		}
	case <-time.After(CancelBound):
		t.Errorf("Run did not return within %v of the cancel", CancelBound)
		return during
	}
	rec.end()
	time.Sleep(300 * time.Millisecond)
	if late := rec.lateEvents(); len(late) > 0 {
		t.Errorf("%d events after Run returned, first %s", len(late), late[0].Type)
	}
	return during
}

// descendants are the processes below the test process (pid → true), from
// /proc; nil where there is none.
func descendants() map[int]bool {
	if runtime.GOOS != "linux" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := stat(pid); ok && state != "Z" {
			parent[pid] = ppid
		}
	}
	self := os.Getpid()
	out := map[int]bool{}
	for pid := range parent {
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == self {
				out[pid] = true
				break
			}
		}
	}
	return out
}

// stat reads a process's parent and state from /proc/pid/stat.
func stat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces and parentheses
	if i < 0 {
		return 0, "", false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields[0], err == nil
}

func newSince(before map[int]bool, after ...map[int]bool) []int {
	var out []int
	for _, m := range after {
		for pid := range m {
			if !before[pid] && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkGone fails if any of pids still runs ProcessBound after now.
func checkGone(t *testing.T, pids []int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Log("no /proc here: the leftover-process check runs on Linux only")
		return
	}
	t.Logf("the session ran %d processes", len(pids))
	deadline := time.Now().Add(ProcessBound)
	for {
		var alive []int
		for _, pid := range pids {
			if _, state, ok := stat(pid); ok && state != "Z" {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes %v still run %v after Close", alive, ProcessBound)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
