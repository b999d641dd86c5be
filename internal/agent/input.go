package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/tools/docread"
	"github.com/ferry-dev/ferry/protocol"
)

// DefaultSystemPrompt is the system prompt of a session in workspace root
// with the given tools, before the mode's section (which is always added).
func DefaultSystemPrompt(root string, toolNames []string) string {
	return fmt.Sprintf(`You are ferry's coding agent. You work in the user's workspace at %s (on %s), through tools: %s.

- Paths are relative to the workspace; you cannot reach outside it.
- Read a file before you change it: Write, Edit, MultiEdit and NotebookEdit refuse files you have not read, and files that changed since.
- Prefer Edit for changes to existing files (MultiEdit for several changes to one file, NotebookEdit for a notebook's cells); keep changes small and focused, and check your work (read it back, run the tests) where you can.
- Some calls need the user's permission. A denied or refused call is final: do not retry it, find another way or say what you need.
- Bash runs in the workspace with a timeout; do not start long-running servers.
- When you are done, answer briefly: what you did, and anything the user must know.`,
		root, runtime.GOOS, strings.Join(toolNames, ", "))
}

// modeSections tell the model what its mode allows. The runtime enforces
// the mode anyway; this keeps the model from wasting calls on refusals.
var modeSections = map[string]string{
	protocol.ModeDefault: "Mode: default. You may read, search, change files and run commands.",
	protocol.ModePlan: "Mode: plan. You may only read and search (Read, Glob, Grep, WebFetch) and keep your todo list (TodoWrite); writes and commands are refused. " +
		"Investigate, then answer with a concrete plan of the changes (files, steps, risks). Do not try to make them.",
	protocol.ModeReview: "Mode: review. You may only read and search, plus read-only git commands through Bash " +
		"(git status, diff, log, show, blame, grep, ls-files); everything else is refused. Produce a code review: " +
		"findings ordered by severity, each with file:line, what is wrong and a suggested fix. Do not change files.",
}

// systemPrompt is the system prompt for a call in mode.
// The project instructions (instr, the text a turn started with) come
// between the two.
func (a *Agent) systemPrompt(mode, instr string) string {
	if instr != "" {
		instr += "\n\n"
	}
	section := modeSections[mode]
	if a.parent != nil && mode == protocol.ModeDefault {
		section = subModeSection
	}
	return a.system + "\n\n" + instr + section
}

// instructionText is the instructions' text in force (the last Refresh).
func (a *Agent) instructionText() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.instr.text
}

// FramePipedStdin frames text that arrived on standard input so the model
// reads it as material, not as instructions from the user.
func FramePipedStdin(stdin string) string {
	return "The user piped this into ferry on standard input:\n<stdin>\n" + strings.TrimRight(stdin, "\n") + "\n</stdin>"
}

// userText is the user message of a prompt: its text (file tokens written
// as paths), the files it references, framed by the input type.
func (t *turnRun) userText(inputType, text string, files []protocol.FileReference) string {
	switch inputType {
	case protocol.InputContinuation:
		if s := strings.TrimSpace(text); s == "" || strings.EqualFold(s, "continue") {
			text = "Continue where you left off."
		}
	case protocol.InputPipedStdin:
		text = FramePipedStdin(text) + "\n\nDo what it asks, or, if it is material rather than a request, summarise it."
	}
	if len(files) > 0 {
		paths := make([]string, len(files))
		for i, f := range files {
			p := f.Path
			if p == "" {
				p = f.WorkspaceRelativePath
			}
			paths[i] = p
		}
		text += "\n\nFiles the user referenced: " + strings.Join(paths, ", ") + " (read them as needed)."
	}
	if t.schema != nil {
		text += "\n\n" + t.schema.instruction()
	}
	return text
}

// PrepareAttachments is files with every image prepared as Read prepares
// one (docread.PrepareImage: shrunk so its longer side is at most maxDim,
// 0 meaning the tools' default, and re-encoded as PNG or JPEG where
// needed), so it fits what model providers take. An image that cannot be
// prepared is refused with an *Error of code bad_request naming its
// context_files entry; nothing else is changed. Every adapter that hands
// images to a model uses it, so a phone photo fails nowhere later.
func PrepareAttachments(ctx context.Context, files []attachment.File, maxDim int) ([]attachment.File, error) {
	if maxDim <= 0 {
		maxDim = tools.DefaultLimits().MaxImageDimension
	}
	out := make([]attachment.File, len(files))
	for i, f := range files {
		out[i] = f
		if !f.IsImage() {
			continue
		}
		p, err := docread.PrepareImage(ctx, f.Name, bytes.NewReader(f.Data), int64(len(f.Data)), docread.ImageFormat(f.Data), maxDim)
		if err != nil {
			return nil, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("payload.context_files[%d]: %s is an image ferry cannot prepare for the model (%s)", i, f.Name, imageRefusal(err)), Err: err}
		}
		out[i].MediaType, out[i].Data = p.MediaType, p.Data
	}
	return out, nil
}

// PrepareForModel is PrepareAttachments for an agent that hands files to
// a model provider itself (ferry's agent, Claude Code): a provider takes
// images, PDFs and text, so a file of any other kind is refused first,
// with an *Error of code unsupported naming its context_files entry,
// rather than shown to the model as garbled text.
func PrepareForModel(ctx context.Context, files []attachment.File, maxDim int) ([]attachment.File, error) {
	for i, f := range files {
		if !f.IsImage() && !f.IsPDF() && !f.IsText() {
			return nil, &Error{Code: protocol.CodeUnsupported, Message: fmt.Sprintf("payload.context_files[%d]: %s is %s, which the model cannot be given (images, PDFs and text files only)", i, f.Name, f.MediaType)}
		}
	}
	return PrepareAttachments(ctx, files, maxDim)
}

// attachmentBlocks are the prompt's attached files as blocks of its user
// message, in order, after the line saying what they are for
// (AttachedIntents, when any file says): an image as an image block, a
// PDF as a document block (each provider writes them in its own format),
// anything else as a text block that names the file and holds its content.
// Images and PDFs follow a line naming them (AttachedMedia). Images are
// prepared (PrepareForModel); one that cannot be, or a file of another
// kind, refuses the turn before anything is sent: none is dropped.
func attachmentBlocks(ctx context.Context, files []attachment.File, maxDim int) ([]llm.Block, error) {
	files, err := PrepareForModel(ctx, files, maxDim)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Block, 0, 1+2*len(files))
	if intents := AttachedIntents(files); intents != "" {
		out = append(out, llm.Block{Type: llm.BlockText, Text: intents})
	}
	for _, f := range files {
		switch {
		case f.IsImage():
			out = append(out, llm.Block{Type: llm.BlockText, Text: AttachedMedia(f)},
				llm.Block{Type: llm.BlockImage, MediaType: f.MediaType, Data: base64.StdEncoding.EncodeToString(f.Data)})
		case f.IsPDF():
			out = append(out, llm.Block{Type: llm.BlockText, Text: AttachedMedia(f)},
				llm.Block{Type: llm.BlockDocument, MediaType: f.MediaType, Data: base64.StdEncoding.EncodeToString(f.Data)})
		default:
			out = append(out, llm.Block{Type: llm.BlockText, Text: AttachedText(f)})
		}
	}
	return out, nil
}

// intents are the context_files intents in the order AttachedIntents
// states them, with what each means to the agent.
var intents = []struct{ intent, group, one string }{
	{protocol.IntentEditTarget, "for you to edit", "to be edited"},
	{protocol.IntentReference, "for reference only (read them, do not change them)", "for reference only"},
	{protocol.IntentContext, "as background context", "as background context"},
}

// AttachedIntents is the line that tells the agent what the user attached
// the files for (context_files[].intent): which are to be edited, which
// are reference, which background; "" when no file has an intent. Every
// adapter that hands attachments to its agent puts it before them.
func AttachedIntents(files []attachment.File) string {
	var parts []string
	for _, in := range intents {
		var names []string
		for _, f := range files {
			if f.Intent == in.intent {
				names = append(names, f.Name)
			}
		}
		if len(names) > 0 {
			parts = append(parts, "The user attached "+strings.Join(names, ", ")+" "+in.group+".")
		}
	}
	return strings.Join(parts, " ")
}

// intentSuffix is ", to be edited" and the like for a file's intent, ""
// for none.
func intentSuffix(f attachment.File) string {
	for _, in := range intents {
		if f.Intent == in.intent {
			return ", " + in.one
		}
	}
	return ""
}

// AttachedMedia is the line that names an attached image or PDF (which
// follows it as a block of its own), with its intent.
func AttachedMedia(f attachment.File) string {
	kind := "an image"
	if f.IsPDF() {
		kind = "a PDF document"
	}
	return "The user attached " + f.Name + " (" + kind + ", next)" + intentSuffix(f) + "."
}

// imageRefusal says why docread refused an image, without internal text.
func imageRefusal(err error) string {
	var pixels *docread.TooManyPixelsError
	switch {
	case errors.As(err, &pixels):
		return fmt.Sprintf("%d×%d px, over the %d megapixels it decodes", pixels.W, pixels.H, docread.MaxImagePixels/1_000_000)
	case errors.Is(err, docread.ErrImageFileTooLarge):
		return "the file is too large to decode"
	case errors.Is(err, docread.ErrImageNotShrinkable):
		return "it cannot be made small enough"
	}
	return "it cannot be decoded; it may be corrupt"
}

// AttachedText is how a text attachment reads to a model: the file's name
// and intent, then its content, fenced so the model tells the file from
// the prompt.
func AttachedText(f attachment.File) string {
	attr := ""
	if f.Intent != "" {
		attr = fmt.Sprintf(" intent=%q", f.Intent)
	}
	return fmt.Sprintf("The user attached the file %s (%s)%s:\n<attached-file name=%q%s>\n%s\n</attached-file>",
		f.Name, f.MediaType, intentSuffix(f), f.Name, attr, strings.TrimRight(string(f.Data), "\n"))
}

// slashNames names the commands of input_type slash_command.
const slashNames = "/compact, /cost, /clear, /mode, /help"

// slashHelp lists the commands of input_type slash_command.
const slashHelp = "Commands: /compact [instruction], /cost, /clear, /mode default|plan|review, /help."

// SlashCommands are the commands of input_type slash_command, as
// agent.commands lists them (the UI's and an ACP editor's menu).
func SlashCommands() []protocol.AgentCommand {
	return []protocol.AgentCommand{
		{Name: "compact", Description: "Summarise the conversation to free context", Hint: "what to keep (optional)"},
		{Name: "cost", Description: "Show the session's tokens and estimated cost"},
		{Name: "clear", Description: "Forget the conversation; the next prompt starts afresh"},
		{Name: "mode", Description: "Show or switch the mode", Hint: "default|plan|review"},
		{Name: "help", Description: "List the commands"},
	}
}

// slash runs a slash command: no model call except /compact's summary.
func (t *turnRun) slash(ctx context.Context, line string) (Result, error) {
	line = strings.TrimSpace(line)
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	var reply string
	switch strings.ToLower(name) {
	case "/compact":
		done, err := t.a.compact(ctx, arg, DefaultCompactRatio, false)
		if err != nil {
			return Result{}, err
		}
		if err := t.emit(ctx, protocol.TypeCompactionDone, done); err != nil {
			return Result{}, fmt.Errorf("agent: emit compaction.done: %w", err)
		}
		reply = fmt.Sprintf("Compacted the conversation: about %d tokens before, %d after.", done.TokensBefore, done.TokensAfter)
	case "/cost":
		reply = t.a.costText()
	case "/clear":
		t.a.clear()
		reply = "Cleared the conversation; the next prompt starts afresh."
	case "/mode":
		if arg == "" {
			reply = fmt.Sprintf("Mode: %s. Switch with /mode default|plan|review.", t.a.Mode())
			break
		}
		if err := t.a.SetMode(arg); err != nil {
			reply = fmt.Sprintf("Unknown mode %q. Modes: default, plan, review.", arg)
			break
		}
		if err := t.emit(ctx, protocol.TypeModeChanged, &protocol.ModeChanged{Mode: arg}); err != nil {
			return Result{}, fmt.Errorf("agent: emit mode.changed: %w", err)
		}
		reply = "Mode: " + arg + "."
	case "/help":
		reply = slashHelp
		if cmds := t.a.Commands()[len(SlashCommands()):]; len(cmds) > 0 {
			names := make([]string, len(cmds))
			for i, c := range cmds {
				names[i] = "/" + c.Name
			}
			reply += " Custom commands (.ferry/commands): " + strings.Join(names, ", ") + "."
		}
	default:
		reply = fmt.Sprintf("Unknown command %s. %s", shorten(name, 64), slashHelp)
	}
	t.text.WriteString(reply)
	if err := t.emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: t.id, Delta: reply, Channel: "text"}); err != nil {
		return Result{}, fmt.Errorf("agent: emit text: %w", err)
	}
	return Result{Final: reply, StopReason: StopEndTurn}, nil
}

// costText is /cost's answer.
func (a *Agent) costText() string {
	a.mu.Lock()
	u, cost, known, calls := a.usage, a.cost, a.costKnown, a.calls
	a.mu.Unlock()
	model, _ := a.Model()
	s := fmt.Sprintf("Session usage (%s %s): %d model calls, %d input tokens, %d output tokens",
		a.provider.Name(), model, calls, u.InputTokens, u.OutputTokens)
	if u.CacheReadTokens > 0 || u.CacheCreationTokens > 0 {
		s += fmt.Sprintf(", %d cache-read and %d cache-write tokens", u.CacheReadTokens, u.CacheCreationTokens)
	}
	if known {
		s += fmt.Sprintf("; estimated cost $%.4f.", cost)
	} else {
		s += "; cost unknown for this model."
	}
	return s
}
