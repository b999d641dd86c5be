package builtin_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// minimalPDF is a PDF as far as any sniffer and provider go.
const minimalPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0/Kids[]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

// TestAttachmentsReachTheModel: an image, a PDF and a text file attached
// to a prompt reach each provider in its own format (the fake server
// decodes what the real SDK sent): Anthropic's base64 image and document
// sources, OpenAI's image_url and file parts with data URLs, and the
// text as a text block naming the file.
func TestAttachmentsReachTheModel(t *testing.T) {
	t.Parallel()
	files := []attachment.File{
		{Name: "shot.png", MediaType: "image/png", Data: adaptertest.AttachedPNG},
		{Name: "spec.pdf", MediaType: "application/pdf", Data: []byte(minimalPDF)},
		{Name: "notes.md", MediaType: "text/markdown", Data: []byte("# Notes\nthe marker is 41-zebra\n")},
	}
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		t.Parallel()
		s, _ := open(t, srv, f, nil)
		srv.Script(fake.Reply{Text: []string{"seen"}}, fake.Reply{Text: []string{"again"}})
		tr := turn("what do you see?")
		tr.Attachments = files
		rec := newRecorder()
		if _, err := s.Run(testCtx(t), tr, rec.emit); err != nil {
			t.Fatal(err)
		}
		if errs := rec.Errors(); len(errs) > 0 {
			t.Fatalf("agent.error %s: %s", errs[0].Code, errs[0].Message)
		}
		reqs := srv.ModelRequests()
		if len(reqs) != 1 {
			t.Fatalf("%d model requests, want 1", len(reqs))
		}
		var img, doc, text *fake.Block
		blocks := reqs[0].UserBlocks()
		for i := range blocks {
			b := &blocks[i]
			switch {
			case b.Type == "image":
				img = b
			case b.Type == "document":
				doc = b
			case b.Type == "text" && strings.Contains(b.Text, "41-zebra"):
				text = b
			}
		}
		if img == nil || img.MediaType != "image/png" || img.Data != base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG) {
			t.Errorf("image block %+v, want the PNG as base64 image/png (blocks %+v)", img, blocks)
		}
		if doc == nil || doc.MediaType != "application/pdf" || doc.Data != base64.StdEncoding.EncodeToString([]byte(minimalPDF)) {
			t.Errorf("document block %+v, want the PDF as base64 application/pdf", doc)
		}
		if text == nil || !strings.Contains(text.Text, "notes.md") {
			t.Errorf("text block %+v, want the file's content naming notes.md", text)
		}
		if blocks[0].Type != "text" || !strings.Contains(blocks[0].Text, "what do you see?") {
			t.Errorf("first block %+v, want the prompt's text", blocks[0])
		}
		// The attachments stay in the conversation: the next turn's
		// request still carries them (once).
		if _, err := s.Run(testCtx(t), turn("and now?"), newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range srv.ModelRequests()[1].UserBlocks() {
			if b.Type == "image" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the second request holds %d images, want the first turn's one", n)
		}
	})
}

// noisePNG is a PNG of w×h random pixels: it does not compress.
func noisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(r.UintN(256)), uint8(r.UintN(256)), uint8(r.UintN(256)), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReadImageInEvent: a Read of a PNG finishes with the image in the
// event for the UI; one whose base64 passes 1 MiB is left out of the
// event (the model still gets it), and the output still says what it was.
func TestReadImageInEvent(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		t.Parallel()
		s, dir := open(t, srv, f, nil)
		if err := os.WriteFile(filepath.Join(dir, "dot.png"), adaptertest.AttachedPNG, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "noise.png"), noisePNG(t, 700, 700), 0o600); err != nil {
			t.Fatal(err)
		}
		read := func(p string) fake.Reply {
			return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": p}}}}
		}
		srv.Script(read("dot.png"), read("noise.png"), fake.Reply{Text: []string{"two images"}})
		rec := newRecorder()
		if _, err := s.Run(testCtx(t), turn("look at the images"), rec.emit); err != nil {
			t.Fatal(err)
		}
		fin := rec.Finished()
		if len(fin) != 2 {
			t.Fatalf("%d tool.finished, want 2", len(fin))
		}
		if len(fin[0].Images) != 1 || fin[0].Images[0].MediaType != "image/png" {
			t.Fatalf("Read of dot.png finished with images %+v, want one PNG", fin[0].Images)
		}
		if got, _ := base64.StdEncoding.DecodeString(fin[0].Images[0].Data); !bytes.HasPrefix(got, []byte("\x89PNG")) {
			t.Errorf("the event's image is not a PNG")
		}
		if len(fin[1].Images) != 0 {
			t.Errorf("the noise image (over 1 MiB of base64) is in the event: %d bytes", len(fin[1].Images[0].Data))
		}
		if !strings.Contains(fin[1].Output, "noise.png") || !strings.Contains(fin[1].Output, "[image image/") {
			t.Errorf("the output %q does not say what the left-out image was", fin[1].Output)
		}
		for i, ev := range fin {
			if err := adaptertest.CheckEvent(protocol.TypeToolFinished, ev); err != nil {
				t.Errorf("tool.finished %d does not pass the decoder: %v", i, err)
			}
		}
		// The model got both images all the same, the large one too.
		if n := strings.Count(string(srv.ModelRequests()[2].Raw), "image/png"); n < 2 {
			t.Errorf("the model's last request names image/png %d times, want both images", n)
		}
	})
}

// TestAttachedImagePrepared: an attached image is prepared as Read
// prepares one: a 3000 px wide PNG reaches the model shrunk to 2000 px;
// an image that cannot be decoded, or a file of a kind no model takes,
// refuses the turn with one coded error naming its context_files entry,
// and nothing reaches the model.
func TestAttachedImagePrepared(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	s, _ := open(t, srv, fake.Anthropic, nil)
	srv.Script(fake.Reply{Text: []string{"wide"}})
	var wide bytes.Buffer
	if err := png.Encode(&wide, image.NewNRGBA(image.Rect(0, 0, 3000, 100))); err != nil {
		t.Fatal(err)
	}
	tr := turn("how wide?")
	tr.Attachments = []attachment.File{{Name: "wide.png", MediaType: "image/png", Data: wide.Bytes()}}
	if _, err := s.Run(testCtx(t), tr, newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	var got *fake.Block
	for _, b := range srv.ModelRequests()[0].UserBlocks() {
		if b.Type == "image" {
			got = &b
		}
	}
	if got == nil {
		t.Fatal("no image block")
	}
	raw, _ := base64.StdEncoding.DecodeString(got.Data)
	cfg, err := png.DecodeConfig(bytes.NewReader(raw))
	if err != nil || cfg.Width != 2000 {
		t.Errorf("the model got a %d px wide image (%v), want 2000", cfg.Width, err)
	}

	bad := turn("and this?")
	bad.Attachments = []attachment.File{{Name: "ok.txt", MediaType: "text/plain", Data: []byte("fine")},
		{Name: "broken.png", MediaType: "image/png", Data: append([]byte("\x89PNG\r\n\x1a\n"), "garbage"...)}}
	rec := newRecorder()
	res, err := s.Run(testCtx(t), bad, rec.emit)
	if err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("%+v, %v", res, err)
	}
	errs := rec.Errors()
	if len(errs) != 1 || errs[0].Code != protocol.AgentCodeBadRequest || !strings.Contains(errs[0].Message, "payload.context_files[1]") || !strings.Contains(errs[0].Message, "broken.png") {
		t.Fatalf("agent.errors %+v", errs)
	}
	// A file no model takes (an archive) is refused the same way, with
	// unsupported, not shown to the model as garbled text.
	zip := turn("and this?")
	zip.Attachments = []attachment.File{{Name: "src.zip", MediaType: "application/zip", Data: []byte("PK\x03\x04")}}
	rec = newRecorder()
	if res, err := s.Run(testCtx(t), zip, rec.emit); err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("%+v, %v", res, err)
	}
	if errs := rec.Errors(); len(errs) != 1 || errs[0].Code != protocol.CodeUnsupported || !strings.Contains(errs[0].Message, "payload.context_files[0]: src.zip is application/zip") {
		t.Fatalf("agent.errors %+v", rec.Errors())
	}
	if n := len(srv.ModelRequests()); n != 1 {
		t.Errorf("%d model requests, want none for the refused turns", n-1)
	}
}

// TestAttachmentIntentsStated: context_files[].intent reaches the model:
// a line before the files says which are to be edited, which are for
// reference only and which are background, and each file's own text says
// its intent too; a file without one is named as before.
func TestAttachmentIntentsStated(t *testing.T) {
	t.Parallel()
	files := []attachment.File{
		{Name: "draft.md", MediaType: "text/markdown", Data: []byte("# Draft\n"), Intent: protocol.IntentEditTarget},
		{Name: "spec.pdf", MediaType: "application/pdf", Data: []byte(minimalPDF), Intent: protocol.IntentReference},
		{Name: "shot.png", MediaType: "image/png", Data: adaptertest.AttachedPNG, Intent: protocol.IntentContext},
		{Name: "plain.txt", MediaType: "text/plain", Data: []byte("plain\n")},
	}
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server) {
		t.Parallel()
		s, _ := open(t, srv, f, nil)
		srv.Script(fake.Reply{Text: []string{"ok"}})
		tr := turn("fix the draft")
		tr.Attachments = files
		if _, err := s.Run(testCtx(t), tr, newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, b := range srv.ModelRequests()[0].UserBlocks() {
			if b.Type == "text" {
				all = append(all, b.Text)
			}
		}
		text := strings.Join(all, "\n")
		for _, want := range []string{
			"The user attached draft.md for you to edit.",
			"The user attached spec.pdf for reference only (read them, do not change them).",
			"The user attached shot.png as background context.",
			"The user attached the file draft.md (text/markdown), to be edited:",
			`<attached-file name="draft.md" intent="edit_target">`,
			"The user attached spec.pdf (a PDF document, next), for reference only.",
			"The user attached the file plain.txt (text/plain):\n<attached-file name=\"plain.txt\">",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("the model's prompt lacks %q:\n%s", want, text)
			}
		}
	})
}
