package master_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// TestPromptContextFilesValidated: a ui.prompt's context_files are checked
// before anything is forwarded, like its file references: a file_url
// outside the scheme allow-list (file:, http:, javascript:, ...), one with
// credentials, a malformed or oversized data: URL, a file name with a path
// or control characters, a malformed media type are each refused with a
// code naming the field, and the client never sees the prompt. Good ones
// pass unchanged.
func TestPromptContextFilesValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	good := protocol.ContextFile{FileURL: "https://files.example/spec.pdf", FileName: "spec.pdf", MimeType: "application/pdf", Intent: "reference"}
	inline := protocol.ContextFile{FileURL: "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("hello")), FileName: "note.txt"}
	big := strings.Repeat("A", 8000)
	for name, tc := range map[string]struct {
		file  protocol.ContextFile
		field string
	}{
		"file scheme":        {protocol.ContextFile{FileURL: "file:///etc/passwd", FileName: "passwd"}, "file_url"},
		"plain http":         {protocol.ContextFile{FileURL: "http://127.0.0.1:8080/admin", FileName: "x"}, "file_url"},
		"javascript":         {protocol.ContextFile{FileURL: "javascript:alert(1)", FileName: "x"}, "file_url"},
		"relative":           {protocol.ContextFile{FileURL: "../../etc/passwd", FileName: "x"}, "file_url"},
		"no host":            {protocol.ContextFile{FileURL: "https:///etc/passwd", FileName: "x"}, "file_url"},
		"credentials":        {protocol.ContextFile{FileURL: "https://user:pass@files.example/x", FileName: "x"}, "file_url"},
		"bad base64":         {protocol.ContextFile{FileURL: "data:text/plain;base64,@@@", FileName: "x"}, "file_url"},
		"data without comma": {protocol.ContextFile{FileURL: "data:text/plain", FileName: "x"}, "file_url"},
		"path in file name":  {protocol.ContextFile{FileURL: good.FileURL, FileName: "../../.bashrc"}, "file_name"},
		"control in name":    {protocol.ContextFile{FileURL: good.FileURL, FileName: "a\x1b[31m.txt"}, "file_name"},
		"bad media type":     {protocol.ContextFile{FileURL: good.FileURL, FileName: "x", MimeType: "text/plain; x=\"unterminated"}, "mime_type"},
	} {
		m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{
			Segments:     []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "look"}},
			ContextFiles: []protocol.ContextFile{good, tc.file},
		})
		m.SessionID = info.ID
		ui.send(m)
		if ans := ui.next(protocol.TypeError); ans.ParentID != m.MessageID {
			t.Fatalf("%s: an error for %s", name, ans.ParentID)
		} else if e := ans.Payload.(*protocol.Error); e.Code != protocol.CodeInvalidValue || e.Field != "payload.context_files[1]."+tc.field {
			t.Errorf("%s: %+v, want invalid_value at payload.context_files[1].%s", name, e, tc.field)
		}
	}
	// Many attachments together past the size cap.
	var many []protocol.ContextFile
	for range 100 {
		many = append(many, protocol.ContextFile{FileURL: "data:," + big, FileName: "x"})
	}
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{
		Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "look"}}, ContextFiles: many})
	m.SessionID = info.ID
	ui.send(m)
	if e := ui.next(protocol.TypeError).Payload.(*protocol.Error); e.Code != protocol.CodeInvalidValue || !strings.HasPrefix(e.Field, "payload.context_files[") {
		t.Errorf("attachments past the size cap: %+v", e)
	}
	ui.sync()

	// Nothing was forwarded: the next request the client gets is the good one.
	ok := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{
		Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "fine"}}, ContextFiles: []protocol.ContextFile{good, inline}})
	ok.SessionID = info.ID
	ui.send(ok)
	req := c.next(protocol.TypePromptRequest)
	if req.MessageID != ok.MessageID {
		t.Fatalf("the client got %s, want only the valid prompt %s", req.MessageID, ok.MessageID)
	}
	if got := req.Payload.(*protocol.PromptRequest).ContextFiles; len(got) != 2 || got[0] != good || got[1] != inline {
		t.Fatalf("forwarded context_files %+v", got)
	}
}
