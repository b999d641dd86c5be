package acp

import (
	"encoding/base64"
	"fmt"
	"net/url"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/protocol"
)

// Attached files (context_files), the ACP way. An agent says in
// initialize's promptCapabilities which content it takes besides text and
// resource links; ferry hands a file over only in a form the agent
// declared, and otherwise refuses the prompt before it starts
// (adapter.AttachmentChecker), naming the file and the capability:
//
//   - an image → an image block (needs the image capability);
//   - a text file → an embedded text resource (embeddedContext), or, for
//     an agent without it, a text block naming the file and holding its
//     content (agent.AttachedText, as ferry's own agent reads it);
//   - a PDF, or any other file → an embedded blob resource (needs
//     embeddedContext: there is no plain-text form of it), after a text
//     block naming it, so the model hears of it even from an agent that
//     drops blobs (claude-code-acp 0.16.2 does).
//
// Resources are named attachment:///<file name>: the file is the user's,
// not one of the workspace, so it has no file:// URI. A text block before
// the files says what they are for, by their context_files intent
// (agent.AttachedIntents).

var _ adapter.AttachmentChecker = (*session)(nil)

// CheckAttachments refuses the first attached file the agent cannot take:
// code unsupported on payload.context_files[i], the message naming the
// agent, the file and the missing prompt capability.
func (s *session) CheckAttachments(files []attachment.File) *protocol.Error {
	pc := s.init.AgentCapabilities.PromptCapabilities
	for i, f := range files {
		var why string
		switch {
		case f.IsImage() && !pc.Image:
			why = "does not take images (its prompt capabilities lack image)"
		case f.IsText() || f.IsImage():
		case !pc.EmbeddedContext:
			kind := "a " + f.MediaType + " file"
			if f.IsPDF() {
				kind = "a PDF"
			}
			why = "cannot be given " + kind + " (its prompt capabilities lack embeddedContext, and only text files go inline)"
		}
		if why != "" {
			return &protocol.Error{Code: protocol.CodeUnsupported, Field: fmt.Sprintf("payload.context_files[%d]", i),
				Message: fmt.Sprintf("%s: this ACP agent (%s) %s; send the prompt without it", f.Name, s.agentName(), why)}
		}
	}
	return nil
}

// agentName is how a refusal names the agent: its own name from
// initialize, else ferry's name for it.
func (s *session) agentName() string {
	if ai := s.init.AgentInfo; ai != nil {
		if ai.Title != "" {
			return ai.Title
		}
		if ai.Name != "" {
			return ai.Name
		}
	}
	return s.a.cfg.Name
}

// attachmentBlocks are the files as content blocks of the prompt, after
// its text and resource links: first a text block saying what they are for
// (agent.AttachedIntents: which to edit, which are reference; none when no
// file says), then the files. CheckAttachments has passed them.
func (s *session) attachmentBlocks(files []attachment.File) []acpsdk.ContentBlock {
	pc := s.init.AgentCapabilities.PromptCapabilities
	out := make([]acpsdk.ContentBlock, 0, 1+2*len(files))
	if intents := agent.AttachedIntents(files); intents != "" {
		out = append(out, acpsdk.TextBlock(intents))
	}
	for _, f := range files {
		u := (&url.URL{Scheme: "attachment", Path: "/" + f.Name}).String()
		mt := acpsdk.Ptr(f.MediaType)
		switch {
		case f.IsImage():
			b := acpsdk.ImageBlock(base64.StdEncoding.EncodeToString(f.Data), f.MediaType)
			b.Image.Uri = acpsdk.Ptr(u)
			out = append(out, b)
		case f.IsText() && pc.EmbeddedContext:
			out = append(out, acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{
				TextResourceContents: &acpsdk.TextResourceContents{Uri: u, MimeType: mt, Text: string(f.Data)}}))
		case f.IsText():
			out = append(out, acpsdk.TextBlock(agent.AttachedText(f)))
		default:
			// Named in text too: an agent may drop a blob it cannot use
			// (claude-code-acp 0.16 does), and the model should still
			// know a file was attached rather than never hear of it.
			out = append(out, acpsdk.TextBlock(fmt.Sprintf("The user attached %s (%s); it follows as the embedded resource %s.", f.Name, f.MediaType, u)))
			out = append(out, acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{
				BlobResourceContents: &acpsdk.BlobResourceContents{Uri: u, MimeType: mt, Blob: base64.StdEncoding.EncodeToString(f.Data)}}))
		}
	}
	return out
}
