package claudecode

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// TestRealAttachmentsAndImages: the real CLI hands a prompt's attached
// image and text file to the model (the fake Anthropic server receives
// the image block and the file's content), and its real Read of a PNG
// finishes with the image in agent.tool.finished.
func TestRealAttachmentsAndImages(t *testing.T) {
	e := newRealEnv(t)
	if err := os.WriteFile(filepath.Join(e.ws, "dot.png"), adaptertest.AttachedPNG, 0o600); err != nil {
		t.Fatal(err)
	}
	e.script.add(
		call("toolu_read", "Read", map[string]any{"file_path": filepath.Join(e.ws, "dot.png")}),
		say("a red dot and a note"),
	)
	s := e.open(t, e.adapter(), protocol.ModeDefault)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	turn := adaptertest.TextTurn("what are these?")
	turn.Attachments = []attachment.File{
		{Name: "shot.png", MediaType: "image/png", Data: adaptertest.AttachedPNG},
		{Name: "note.txt", MediaType: "text/plain", Data: []byte(adaptertest.AttachedNote + "\n")},
		{Name: "spec.pdf", MediaType: "application/pdf", Data: []byte(fakePDF)},
	}
	rec := newRecorder(t)
	res, err := s.Run(ctx, turn, rec.emit)
	if err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v, errors %+v", res, err, rec.Errors())
	}
	reqs := e.script.requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	var img, note, doc bool
	for _, b := range reqs[0].UserBlocks() {
		doc = doc || b.Type == "document" && b.MediaType == "application/pdf" && b.Data == base64.StdEncoding.EncodeToString([]byte(fakePDF))
		img = img || b.Type == "image" && b.MediaType == "image/png" && b.Data == base64.StdEncoding.EncodeToString(adaptertest.AttachedPNG)
		note = note || b.Type == "text" && strings.Contains(b.Text, adaptertest.AttachedNote) && strings.Contains(b.Text, "note.txt")
	}
	if !img || !note || !doc {
		t.Errorf("the model got the image: %v, the note: %v, the PDF: %v; blocks %+v", img, note, doc, summarize(reqs[0].UserBlocks()))
	}
	fin := rec.Finished()
	if len(fin) != 1 || fin[0].Status != protocol.ToolOK {
		t.Fatalf("tool.finished %+v, want the Read ok", fin)
	}
	if len(fin[0].Images) != 1 {
		t.Fatalf("the Read of dot.png finished with %d images (output %q)", len(fin[0].Images), fin[0].Output)
	}
	if data, err := base64.StdEncoding.DecodeString(fin[0].Images[0].Data); err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) && !bytes.HasPrefix(data, []byte("\xff\xd8")) {
		t.Errorf("the event's image (%s) is no PNG or JPEG", fin[0].Images[0].MediaType)
	}
}

// summarize is blocks with their data cut, for a failure message.
func summarize(blocks []fake.Block) []fake.Block {
	out := make([]fake.Block, len(blocks))
	for i, b := range blocks {
		if len(b.Data) > 32 {
			b.Data = b.Data[:32] + "…"
		}
		if len(b.Text) > 200 {
			b.Text = b.Text[:200] + "…"
		}
		out[i] = b
	}
	return out
}
