// Package attachment is what a file the user attached to a prompt
// (context_files) is by the time an agent gets it: fetched by the client,
// its size checked and its type sniffed from its bytes, never trusted from
// a header. The adapters turn a File into their agent's own form (a
// provider's image or document block, a stream-json content block, an ACP
// image or resource block) or refuse it with a coded error before the turn
// starts; none drops one silently.
//
// Fetcher (fetch.go) is the client's side: it decodes data: URLs, fetches
// ferry-upload URLs from the master with the prompt's grant, and fetches
// other https URLs only when the operator enabled it, through a dialer that
// refuses non-public addresses before connecting. Guarantees: no file is
// read past its cap (MaxBytes, and MaxTotalBytes for a prompt's files
// together); every type is sniffed from the bytes (Sniff: PNG, JPEG, GIF,
// WebP, PDF or UTF-8 text, nothing else) and must agree with the declared
// mime_type; every failure is one coded error naming the file's field.
package attachment

import (
	"strings"
)

// MaxBytes caps one attachment's content, on the master when it is uploaded
// and on the client when it is fetched.
const MaxBytes = 20 << 20

// File is one attachment, in the order of the prompt's context_files.
type File struct {
	// Name is the bare file name the user gave (context_files' file_name).
	Name string
	// MediaType is the sniffed media type without parameters, e.g.
	// "image/png", "application/pdf", "text/plain".
	MediaType string
	// Data is the whole content.
	Data []byte
	// Intent is the context_files entry's intent (protocol.IntentReference,
	// IntentEditTarget, IntentContext; "" when unset): every adapter that
	// takes attachments states it in the agent's prompt.
	Intent string
}

// IsImage reports whether the file is an image a model provider takes:
// PNG, JPEG, GIF or WebP.
func (f File) IsImage() bool {
	switch f.MediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// IsPDF reports whether the file is a PDF document.
func (f File) IsPDF() bool { return f.MediaType == "application/pdf" }

// IsText reports whether the file is text (its content is valid to show
// the model as text).
func (f File) IsText() bool {
	return strings.HasPrefix(f.MediaType, "text/") || f.MediaType == "application/json"
}
