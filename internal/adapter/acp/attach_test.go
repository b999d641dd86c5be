package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

const attachedPDF = "%PDF-1.4\n%%EOF\n"

// promptCaps is an initialize result's agentCapabilities with the given
// prompt capabilities.
func promptCaps(image, embedded bool) map[string]any {
	return map[string]any{"agentCapabilities": map[string]any{"loadSession": false,
		"promptCapabilities": map[string]any{"image": image, "embeddedContext": embedded}}}
}

func attachedFiles() []attachment.File {
	return []attachment.File{
		{Name: "shot.png", MediaType: "image/png", Data: adaptertest.AttachedPNG},
		{Name: "note.txt", MediaType: "text/plain", Data: []byte(adaptertest.AttachedNote)},
		{Name: "spec.pdf", MediaType: "application/pdf", Data: []byte(attachedPDF)},
	}
}

// TestAttachmentsAccepted: an agent whose prompt capabilities take images
// and embedded context gets an image block, and each text file and PDF as
// an embedded resource (text, or a base64 blob), after the prompt's text.
func TestAttachmentsAccepted(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Init: promptCaps(true, true), Turns: [][]step{{{Text: "seen"}}}})
	s := p.open(t, protocol.ModeDefault)
	if pe := s.CheckAttachments(attachedFiles()); pe != nil {
		t.Fatalf("CheckAttachments = %v", pe)
	}
	tn := turn("look")
	tn.Attachments = attachedFiles()
	rec, res, err := run(t, s, tn)
	if err != nil || res.StopReason != protocol.StopEndTurn || len(rec.Errors()) > 0 {
		t.Fatalf("%+v, %v, %+v", res, err, rec.Errors())
	}
	prompts := p.receivedMethod(t, "session/prompt")
	blocks, _ := prompts[0]["prompt"].([]any)
	if len(blocks) != 5 {
		t.Fatalf("the agent got %d blocks, want text, image, a resource, a text naming the PDF and its resource: %v", len(blocks), blocks)
	}
	b := func(i int) map[string]any { m, _ := blocks[i].(map[string]any); return m }
	if b(0)["type"] != "text" || b(0)["text"] != "look" {
		t.Errorf("block 0 %v, want the prompt", b(0))
	}
	if b(1)["type"] != "image" || b(1)["mimeType"] != "image/png" || b(1)["data"] != base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG) {
		t.Errorf("block 1 %v, want the PNG", b(1))
	}
	res1, _ := b(2)["resource"].(map[string]any)
	if b(2)["type"] != "resource" || res1["uri"] != "attachment:///note.txt" || res1["mimeType"] != "text/plain" || res1["text"] != adaptertest.AttachedNote {
		t.Errorf("block 2 %v, want the note as a text resource", b(2))
	}
	if text, _ := b(3)["text"].(string); !strings.Contains(text, "spec.pdf") {
		t.Errorf("block 3 %v, want a text naming the PDF", b(3))
	}
	res2, _ := b(4)["resource"].(map[string]any)
	if b(4)["type"] != "resource" || res2["uri"] != "attachment:///spec.pdf" || res2["mimeType"] != "application/pdf" || res2["blob"] != base64.StdEncoding.EncodeToString([]byte(attachedPDF)) {
		t.Errorf("block 4 %v, want the PDF as a blob resource", b(4))
	}
}

// TestAttachmentsRefused: an agent without the image capability is
// refused an image, one without embeddedContext a PDF, each with a coded
// error naming the file's context_files entry, the agent and the missing
// capability, before the turn starts: Run refuses too and the agent gets
// no prompt. A text file goes inline without embeddedContext.
func TestAttachmentsRefused(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{{Text: "seen"}}}}) // no promptCapabilities
	s := p.open(t, protocol.ModeDefault)
	files := attachedFiles()
	pe := s.CheckAttachments(files)
	if pe == nil || pe.Code != protocol.CodeUnsupported || pe.Field != "payload.context_files[0]" ||
		!strings.Contains(pe.Message, "acppeer") || !strings.Contains(pe.Message, "does not take images (its prompt capabilities lack image)") {
		t.Fatalf("CheckAttachments(image) = %v", pe)
	}
	pe = s.CheckAttachments(files[1:])
	if pe == nil || pe.Code != protocol.CodeUnsupported || pe.Field != "payload.context_files[1]" || !strings.Contains(pe.Message, "embeddedContext") {
		t.Fatalf("CheckAttachments(PDF) = %v", pe)
	}
	tn := turn("look")
	tn.Attachments = files
	rec, res, err := run(t, s, tn)
	if err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("%+v, %v", res, err)
	}
	if errs := rec.Errors(); len(errs) != 1 || errs[0].Code != protocol.CodeUnsupported || !strings.Contains(errs[0].Message, "payload.context_files[0]") {
		t.Fatalf("agent.errors %+v", errs)
	}
	if got := p.receivedMethod(t, "session/prompt"); len(got) != 0 {
		t.Fatalf("the agent got %d prompts after the refusal", len(got))
	}
	// A text file alone goes inline, as a text block naming it.
	if pe := s.CheckAttachments(files[1:2]); pe != nil {
		t.Fatalf("CheckAttachments(text) = %v", pe)
	}
	tn = turn("read it")
	tn.Attachments = files[1:2]
	if _, res, err := run(t, s, tn); err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	prompts := p.receivedMethod(t, "session/prompt")
	blocks, _ := prompts[0]["prompt"].([]any)
	last, _ := blocks[len(blocks)-1].(map[string]any)
	if text, _ := last["text"].(string); last["type"] != "text" || !strings.Contains(text, "note.txt") || !strings.Contains(text, adaptertest.AttachedNote) {
		t.Errorf("the text file went as %v", last)
	}
}

// TestBrokenImageRefused: an attached image that cannot be decoded
// refuses the turn (bad_request naming its context_files entry) before
// the agent gets a prompt.
func TestBrokenImageRefused(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Init: promptCaps(true, true)})
	s := p.open(t, protocol.ModeDefault)
	tn := turn("look")
	tn.Attachments = []attachment.File{{Name: "broken.png", MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\ngarbage")}}
	rec, res, err := run(t, s, tn)
	if err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("%+v, %v", res, err)
	}
	if errs := rec.Errors(); len(errs) != 1 || errs[0].Code != protocol.AgentCodeBadRequest || !strings.Contains(errs[0].Message, "payload.context_files[0]: broken.png") {
		t.Fatalf("agent.errors %+v", errs)
	}
	if got := p.receivedMethod(t, "session/prompt"); len(got) != 0 {
		t.Fatalf("the agent got %d prompts", len(got))
	}
}

// TestToolCallImage: a tool call whose content holds an image finishes
// with the image in the event; one over 1 MiB of base64 is left out, the
// output still saying it was an image.
func TestToolCallImage(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("A", protocol.MaxToolImageBytes+4)
	pngB64 := base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)
	call := func(id, data string) []step {
		return []step{
			{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": "Read x.png", "kind": "read", "status": "pending"}},
			{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
				"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "image", "mimeType": "image/png", "data": data}}}}},
		}
	}
	p := newPeer(t, acppeer.Script{Turns: [][]step{append(call("c1", pngB64), call("c2", big)...)}})
	s := p.open(t, protocol.ModeDefault)
	rec, res, err := run(t, s, turn("read"))
	if err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	fin := rec.Finished()
	if len(fin) != 2 {
		t.Fatalf("%d tool.finished, want 2", len(fin))
	}
	if len(fin[0].Images) != 1 || fin[0].Images[0].Data != pngB64 || fin[0].Images[0].MediaType != "image/png" {
		t.Errorf("the small image's event has images %+v", fin[0].Images)
	}
	if len(fin[1].Images) != 0 || fin[1].Output != "[image image/png]" {
		t.Errorf("the large image's event: %d images, output %q", len(fin[1].Images), fin[1].Output)
	}
	for _, f := range fin {
		if err := adaptertest.CheckEvent(protocol.TypeToolFinished, f); err != nil {
			t.Error(err)
		}
	}
}

// TestRealAgentAttachments: claude-code-acp declares the image and
// embeddedContext prompt capabilities; an attached image and text file
// reach the fake Anthropic server through it (an image block, the note's
// content), and the PDF is named to the model.
func TestRealAgentAttachments(t *testing.T) {
	t.Parallel()
	s, srv, _ := realSession(t)
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true
		}
		return fake.Reply{Text: []string{"a red dot"}}, true
	})
	files := attachedFiles()
	if pe := s.CheckAttachments(files); pe != nil {
		t.Fatalf("CheckAttachments = %v (prompt capabilities %+v)", pe, s.init.AgentCapabilities.PromptCapabilities)
	}
	tn := turn("what is attached?")
	tn.Attachments = files
	rec, res, err := run(t, s, tn)
	if err != nil || res.StopReason != protocol.StopEndTurn || len(rec.Errors()) > 0 {
		t.Fatalf("%+v, %v, %+v", res, err, rec.Errors())
	}
	var img, note, pdfNamed bool
	for _, r := range srv.ModelRequests() {
		for _, b := range r.UserBlocks() {
			img = img || b.Type == "image" && b.MediaType == "image/png" && b.Data == base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)
			note = note || strings.Contains(b.Text, adaptertest.AttachedNote)
			pdfNamed = pdfNamed || strings.Contains(b.Text, "The user attached spec.pdf")
		}
	}
	// claude-code-acp 0.16.2 drops blob resources ("unsupported" in its
	// source): the PDF's bytes do not reach the model, but the text
	// naming it does.
	if !img || !note || !pdfNamed {
		t.Errorf("the model got the image: %v, the note: %v, the PDF named: %v", img, note, pdfNamed)
	}
}

// FuzzToolImages: whatever a tool call's content holds, the images taken
// from it make a valid agent.tool.finished.
func FuzzToolImages(f *testing.F) {
	png := base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)
	for _, s := range []string{
		`[{"type":"content","content":{"type":"image","mimeType":"image/png","data":"` + png + `"}}]`,
		`[{"type":"content","content":{"type":"image","mimeType":"image/svg+xml","data":"PHN2Zz4="}},{"type":"content","content":{"type":"text","text":"x"}}]`,
		`[{"type":"content","content":{"type":"image","mimeType":"image/png","data":"%%%"}},{"type":"diff","path":"/a","newText":"b"}]`,
		`[{"type":"content","content":null}]`, `{}`, `null`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		imgs := toolImages(content)
		ev := &protocol.ToolFinished{TurnID: "t", ToolUseID: "c", ToolName: "Read", Status: protocol.ToolOK, Images: imgs}
		if len(imgs) > 0 {
			if err := adaptertest.CheckEvent(protocol.TypeToolFinished, ev); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestPeerCommand: the acppeer program, as the browser tests run it
// (ferry up --agent acp:<built binary>, no script), answers a prompt and
// is refused an image before the turn starts.
func TestPeerCommand(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build acppeer: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "acppeer")
	build := exec.Command(goBin, "build", "-o", bin, "./acppeer/cmd/acppeer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	a, err := New(Config{Command: []string{bin}, Name: "acppeer", Env: []string{acppeer.EnvScript + "="}, Logger: (&adaptertest.LogBuffer{}).Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := adaptertest.Open(t, ctx, a, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}}).(*session)
	rec, res, err := run(t, s, turn("hello"))
	if err != nil || res.StopReason != protocol.StopEndTurn || !strings.Contains(rec.Text("text"), "acppeer got your prompt") {
		t.Fatalf("%+v, %v, text %q", res, err, rec.Text("text"))
	}
	pe := s.CheckAttachments([]attachment.File{{Name: "shot.png", MediaType: "image/png", Data: adaptertest.AttachedPNG}})
	if pe == nil || pe.Code != protocol.CodeUnsupported || !strings.Contains(pe.Message, "does not take images") {
		t.Fatalf("CheckAttachments(image) = %v", pe)
	}
}

// TestAttachmentIntentsStated: the agent's prompt says what the attached
// files are for (context_files[].intent): a text block after the prompt's
// text names those to edit and those for reference; with embedded context
// the files follow as resources, without it a text file's inline block
// says its intent too.
func TestAttachmentIntentsStated(t *testing.T) {
	t.Parallel()
	files := func() []attachment.File {
		fs := attachedFiles()
		fs[0].Intent = protocol.IntentReference  // the image
		fs[1].Intent = protocol.IntentEditTarget // the note
		return fs
	}
	for _, embedded := range []bool{true, false} {
		p := newPeer(t, acppeer.Script{Init: promptCaps(true, embedded), Turns: [][]step{{{Text: "seen"}}}})
		s := p.open(t, protocol.ModeDefault)
		tn := turn("fix the note")
		tn.Attachments = files()[:2]
		if _, res, err := run(t, s, tn); err != nil || res.StopReason != protocol.StopEndTurn {
			t.Fatalf("embedded %v: %+v, %v", embedded, res, err)
		}
		blocks, _ := p.receivedMethod(t, "session/prompt")[0]["prompt"].([]any)
		b1, _ := blocks[1].(map[string]any)
		if want := "The user attached note.txt for you to edit. The user attached shot.png for reference only (read them, do not change them)."; b1["text"] != want {
			t.Errorf("embedded %v: block 1 %v, want %q", embedded, b1, want)
		}
		if !embedded {
			raw, _ := json.Marshal(blocks)
			if !strings.Contains(string(raw), `note.txt (text/plain), to be edited:`) {
				t.Errorf("the inline note does not say its intent: %s", raw)
			}
		}
	}
}
