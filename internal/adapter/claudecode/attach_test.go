package claudecode

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/protocol"
)

const fakePDF = "%PDF-1.4\n%%EOF\n"

// TestFakeAttachments: a prompt with files attached goes to Claude Code as
// one stream-json user message whose content is the prompt's text block,
// then an image block and a document block with base64 sources, and the
// text file as a text block naming it.
func TestFakeAttachments(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	turn := adaptertest.TextTurn("look at these")
	turn.Attachments = []attachment.File{
		{Name: "shot.png", MediaType: "image/png", Data: adaptertest.AttachedPNG},
		{Name: "spec.pdf", MediaType: "application/pdf", Data: []byte(fakePDF)},
		{Name: "note.txt", MediaType: "text/plain", Data: []byte(adaptertest.AttachedNote)},
	}
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, turn, rec.emit)
	if err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v; log:\n%s", res, err, env.logs.String())
	}
	var got []map[string]any
	for _, e := range readFakeLog(t, env.log) {
		var line struct {
			Type    string `json:"type"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(e.Got, &line) == nil && line.Type == "user" {
			if err := json.Unmarshal(line.Message.Content, &got); err != nil {
				t.Fatalf("the user message's content is not blocks: %s", line.Message.Content)
			}
		}
	}
	source := func(b map[string]any) (string, string) {
		src, _ := b["source"].(map[string]any)
		if src["type"] != "base64" {
			return "", ""
		}
		return src["media_type"].(string), src["data"].(string)
	}
	var img, doc, note bool
	for _, b := range got {
		switch b["type"] {
		case "image":
			mt, data := source(b)
			img = mt == "image/png" && data == base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)
		case "document":
			mt, data := source(b)
			doc = mt == "application/pdf" && data == base64.StdEncoding.EncodeToString([]byte(fakePDF)) && b["title"] == "spec.pdf"
		case "text":
			s, _ := b["text"].(string)
			note = note || strings.Contains(s, adaptertest.AttachedNote) && strings.Contains(s, "note.txt")
		}
	}
	if len(got) == 0 || got[0]["type"] != "text" || got[0]["text"] != "look at these" {
		t.Errorf("the first block is not the prompt: %v", got)
	}
	if !img || !doc || !note {
		t.Errorf("image %v, document %v, text file %v in %v", img, doc, note, got)
	}
	// The fake echoes the text blocks: the turn ran on the whole message.
	if !strings.Contains(rec.Text("text"), adaptertest.AttachedNote) {
		t.Errorf("the turn's text %q does not echo the attached note", rec.Text("text"))
	}
}

// TestFakeToolResultImages: a tool_result whose content holds an image
// (Claude Code's Read of a PNG) finishes with the image in the event; an
// image over 1 MiB of base64 is left out, the output still saying
// "[image]".
func TestFakeToolResultImages(t *testing.T) {
	t.Parallel()
	env := openFake(t, "images", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t) // checks each event against the decoder
	if res, err := env.sess.Run(ctx, adaptertest.TextTurn("read them"), rec.emit); err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	fin := rec.Finished()
	if len(fin) != 2 {
		t.Fatalf("%d tool.finished, want 2", len(fin))
	}
	if len(fin[0].Images) != 1 || fin[0].Images[0].MediaType != "image/png" || fin[0].Images[0].Data != fakePNG {
		t.Errorf("the small image's event has images %+v", fin[0].Images)
	}
	if len(fin[1].Images) != 0 || fin[1].Output != "[image]" {
		t.Errorf("the large image's event: %d images, output %q", len(fin[1].Images), fin[1].Output)
	}
}

// TestResultContentImages: a tool_result's images are read block by
// block; what the UI cannot show is left out, the text keeps "[image]".
func TestResultContentImages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		text   string
		images int
	}{
		{`"plain"`, "plain", 0},
		{`[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + fakePNG + `"}}]`, "a[image]", 1},
		{`[{"type":"image","source":"odd"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"` + fakePNG + `"}}]`, "[image][image]", 1},
		{`[{"type":"image","source":{"type":"base64","media_type":"image/svg+xml","data":"PHN2Zz4="}}]`, "[image]", 0},
		{`[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]`, "[image]", 0},
		{`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]`, "[image]", 0},
	}
	for _, c := range cases {
		var rc resultContent
		if err := json.Unmarshal([]byte(c.in), &rc); err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if string(rc.text) != c.text || len(rc.images) != c.images {
			t.Errorf("%s: text %q, %d images; want %q, %d", c.in, rc.text, len(rc.images), c.text, c.images)
		}
	}
}

// TestFakeBrokenImageRefused: an attached image that cannot be decoded
// refuses the turn (bad_request naming its context_files entry), and so
// does a file no model takes (unsupported), before Claude Code gets a
// prompt.
func TestFakeBrokenImageRefused(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	turn := adaptertest.TextTurn("look")
	turn.Attachments = []attachment.File{{Name: "broken.png", MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\ngarbage")}}
	rec := newRecorder(t)
	res, err := env.sess.Run(ctx, turn, rec.emit)
	if err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("%+v, %v", res, err)
	}
	if errs := rec.Errors(); len(errs) != 1 || errs[0].Code != protocol.AgentCodeBadRequest || !strings.Contains(errs[0].Message, "payload.context_files[0]: broken.png") {
		t.Fatalf("agent.errors %+v", errs)
	}
	// A file no model takes is refused too (unsupported).
	turn = adaptertest.TextTurn("and this")
	turn.Attachments = []attachment.File{{Name: "src.zip", MediaType: "application/zip", Data: []byte("PK\x03\x04")}}
	rec = newRecorder(t)
	if res, err := env.sess.Run(ctx, turn, rec.emit); err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("%+v, %v", res, err)
	}
	if errs := rec.Errors(); len(errs) != 1 || errs[0].Code != protocol.CodeUnsupported || !strings.Contains(errs[0].Message, "src.zip") {
		t.Fatalf("agent.errors %+v", errs)
	}
	if _, err := os.Stat(env.log); err == nil {
		for _, e := range readFakeLog(t, env.log) {
			if strings.Contains(string(e.Got), `"type":"user"`) {
				t.Fatalf("Claude Code got a prompt: %s", e.Got)
			}
		}
	}
}

// TestFakeAttachmentIntents: the prompt Claude Code gets says what each
// attached file is for (context_files[].intent): a text block before the
// files naming those to edit and those for reference, and each file's own
// block or line saying its intent.
func TestFakeAttachmentIntents(t *testing.T) {
	t.Parallel()
	env := openFake(t, "echo", nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	turn := adaptertest.TextTurn("fix the draft")
	turn.Attachments = []attachment.File{
		{Name: "draft.md", MediaType: "text/markdown", Data: []byte("# Draft\n"), Intent: protocol.IntentEditTarget},
		{Name: "spec.pdf", MediaType: "application/pdf", Data: []byte(fakePDF), Intent: protocol.IntentReference},
	}
	if _, err := env.sess.Run(ctx, turn, newRecorder(t).emit); err != nil {
		t.Fatal(err)
	}
	sent := lastUserLine(t, env.log)
	var line struct {
		Message struct {
			Content []map[string]any `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(sent), &line); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, b := range line.Message.Content {
		if s, ok := b["text"].(string); ok {
			texts = append(texts, s)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{
		"The user attached draft.md for you to edit. The user attached spec.pdf for reference only (read them, do not change them).",
		"The user attached the file draft.md (text/markdown), to be edited:",
		"The user attached spec.pdf (a PDF document, next), for reference only.",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Claude Code's prompt lacks %q:\n%s", want, all)
		}
	}
}
