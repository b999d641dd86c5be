package acpagent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/protocol"
)

// compose turns the editor's content blocks into a ferry prompt: text as
// typed text, a resource link to a file of the workspace as a picked file
// (the agent reads it), an embedded resource as text in the prompt, an
// image (or another embedded file) as an attachment uploaded to the master
// as the web UI does.
func (s *session) compose(ctx context.Context, blocks []acp.ContentBlock) (*protocol.UIPrompt, error) {
	p := &protocol.UIPrompt{}
	text := func(t string) {
		if n := len(p.Segments); n > 0 && p.Segments[n-1].Kind == protocol.SegmentText {
			p.Segments[n-1].Text += t
			return
		}
		p.Segments = append(p.Segments, protocol.PromptSegment{Kind: protocol.SegmentText, Text: t})
	}
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			text(b.Text.Text)
		case b.ResourceLink != nil:
			l := b.ResourceLink
			if rel, ok := s.workspaceFile(l.Uri); ok {
				p.Segments = append(p.Segments, protocol.PromptSegment{Kind: protocol.SegmentFile, File: &protocol.PickedFile{Path: rel, DisplayPath: rel}})
				continue
			}
			text(fmt.Sprintf("[%s](%s)", l.Name, l.Uri))
		case b.Resource != nil:
			r := b.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				t := r.TextResourceContents
				text(fmt.Sprintf("\n<resource uri=%q>\n%s\n</resource>\n", t.Uri, t.Text))
			case r.BlobResourceContents != nil:
				bl := r.BlobResourceContents
				mt := ""
				if bl.MimeType != nil {
					mt = *bl.MimeType
				}
				f, err := s.attach(ctx, i, bl.Blob, mt, nameOf(bl.Uri))
				if err != nil {
					return nil, err
				}
				p.ContextFiles = append(p.ContextFiles, f)
			}
		case b.Image != nil:
			f, err := s.attach(ctx, i, b.Image.Data, b.Image.MimeType, "")
			if err != nil {
				return nil, err
			}
			p.ContextFiles = append(p.ContextFiles, f)
		case b.Audio != nil:
			return nil, reqErr(codeInvalidParams, "Invalid params: prompt[%d]: ferry takes no audio (promptCapabilities.audio is false)", i)
		default:
			return nil, reqErr(codeInvalidParams, "Invalid params: prompt[%d]: a content block of no type ferry knows", i)
		}
	}
	if len(p.Segments) == 0 {
		if len(p.ContextFiles) == 0 {
			return nil, reqErr(codeInvalidParams, "Invalid params: the prompt is empty")
		}
		text("See the attached file.")
	}
	if t := p.Segments[0].Text; p.Segments[0].Kind == protocol.SegmentText && strings.HasPrefix(t, "/") && s.isCommand(t) {
		p.InputType = protocol.InputSlashCommand
	}
	return p, nil
}

// isCommand reports whether text starts with one of the agent's commands.
func (s *session) isCommand(text string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(text, "/"), " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.commands {
		if c == name {
			return true
		}
	}
	return false
}

// workspaceFile is the workspace-relative path of a file: URI inside the
// session's workspace.
func (s *session) workspaceFile(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return "", false
	}
	rel, err := filepath.Rel(s.t.Workspace, filepath.Clean(u.Path))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func nameOf(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		return filepath.Base(u.Path)
	}
	return ""
}

// attach uploads a base64 file of the prompt's block i to the master.
func (s *session) attach(ctx context.Context, i int, data, mimeType, name string) (protocol.ContextFile, error) {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return protocol.ContextFile{}, reqErr(codeInvalidParams, "Invalid params: prompt[%d]: the data is not base64", i)
	}
	if name == "" {
		ext := ""
		if _, sub, ok := strings.Cut(mimeType, "/"); ok {
			ext = "." + sub
		}
		name = fmt.Sprintf("attachment-%d%s", i+1, ext)
	}
	id, err := s.upload(ctx, name, raw)
	if err != nil {
		return protocol.ContextFile{}, err
	}
	return protocol.ContextFile{FileURL: protocol.UploadURL(id, ""), FileName: name, MimeType: mimeType}, nil
}

// upload posts a file to the session's uploads, as the web UI does
// (docs/attachments.md), and returns its upload id.
func (s *session) upload(ctx context.Context, name string, data []byte) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err == nil {
		_, err = fw.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", s.a.wireErr(err, "upload an attachment")
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.ui.base+"/v1/sessions/"+url.PathEscape(s.id)+"/uploads", &body)
	if err != nil {
		return "", s.a.wireErr(err, "upload an attachment")
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+s.t.Token)
	res, err := s.ui.http.Do(req)
	if err != nil {
		return "", s.a.wireErr(err, "upload an attachment")
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusCreated {
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &e)
		if e.Message == "" {
			e.Message = res.Status
		}
		return "", reqErr(codeInvalidParams, "Invalid params: the attachment %s was refused: %s", name, e.Message)
	}
	var ok struct {
		UploadID string `json:"upload_id"`
	}
	if err := json.Unmarshal(b, &ok); err != nil || ok.UploadID == "" {
		return "", s.a.wireErr(fmt.Errorf("upload answered %q", b), "upload an attachment")
	}
	return ok.UploadID, nil
}
