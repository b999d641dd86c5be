package acp

import (
	"net/url"
	"path/filepath"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/adapter/framing"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// promptBlocks converts a prompt the Claude Code way (§16.3, first row):
// the text keeps each file token as its path, so the sentence still reads
// (a token without a usable path becomes its display path), and each
// referenced file travels as a resource_link block, which every ACP agent
// must accept. Files are linked by absolute file:// URI.
//
// The text is framed by the input type (framing.Prompt): piped input as
// material, an empty continuation as a request to go on.
func promptBlocks(inputType string, p fileref.Prompt, workspace string) []acpsdk.ContentBlock {
	text, files := p.FileList()
	blocks := []acpsdk.ContentBlock{acpsdk.TextBlock(framing.Prompt(inputType, text))}
	for _, f := range files {
		path := f.Path
		if path == "" {
			path = f.WorkspaceRelativePath
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(workspace, filepath.FromSlash(path))
		}
		name := f.Name
		if name == "" {
			name = filepath.Base(path)
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Clean(path))}
		b := acpsdk.ResourceLinkBlock(name, u.String())
		if f.MimeType != "" {
			b.ResourceLink.MimeType = acpsdk.Ptr(f.MimeType)
		}
		if f.SizeBytes != nil {
			b.ResourceLink.Size = acpsdk.Ptr(int(*f.SizeBytes))
		}
		blocks = append(blocks, b)
	}
	return blocks
}
