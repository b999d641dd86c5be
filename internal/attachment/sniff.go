package attachment

import (
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"
)

// ErrTooLarge is returned (wrapped) for content over the size cap.
var ErrTooLarge = errors.New("attachment too large")

// ErrUnsupportedType is returned (wrapped) for content that is none of the
// kinds an attachment may be.
var ErrUnsupportedType = errors.New("unsupported attachment type")

// ErrTypeMismatch is returned (wrapped) when the content is not of the
// type its sender declared.
var ErrTypeMismatch = errors.New("attachment type does not match its content")

// binaryTypes are the binary kinds an attachment may be, as sniffed.
var binaryTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}

// textTypes narrow text by its name's extension, to the text types File.IsText
// knows; anything else that is text (source code, logs) is text/plain.
var textTypes = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".csv":      "text/csv",
	".json":     "application/json",
}

// Sniff returns data's media type (no parameters) from its bytes alone,
// narrowed by name's extension only for text: one of the images a model
// provider takes (PNG, JPEG, GIF, WebP), a PDF, or UTF-8 text without
// control characters (text/plain, text/markdown, text/csv,
// application/json). Anything else is ErrUnsupportedType: HTML or SVG, for
// one, is never reported as a type a browser would run.
func Sniff(name string, data []byte) (string, error) {
	m := mimetype.Detect(data)
	for _, t := range binaryTypes {
		if m.Is(t) {
			return t, nil
		}
	}
	if !isText(data) {
		return "", fmt.Errorf("%w: the content is %s, not an image (PNG, JPEG, GIF, WebP), a PDF or UTF-8 text", ErrUnsupportedType, m.String())
	}
	if t, ok := textTypes[strings.ToLower(path.Ext(name))]; ok {
		return t, nil
	}
	return "text/plain", nil
}

// isText reports whether data is UTF-8 with no control characters but
// tab, line feed, form feed and carriage return (a BOM is fine).
func isText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// Matches reports whether declared (a media type the sender gave, with or
// without parameters; "" and application/octet-stream, which say the
// sender did not know, match anything) agrees with sniffed, a type
// Sniff returned: images and PDFs must be exactly what they claim (image/jpg
// is read as image/jpeg), and any text type the sender names agrees with
// sniffed text, whose subtype comes from the name anyway.
func Matches(declared, sniffed string) bool {
	if declared == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(declared)
	if err != nil {
		return false
	}
	if mt == "image/jpg" || mt == "image/pjpeg" {
		mt = "image/jpeg"
	}
	if mt == sniffed || mt == "application/octet-stream" { // octet-stream: the sender did not know
		return true
	}
	if !(File{MediaType: sniffed}).IsText() {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" ||
		strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") ||
		mt == "application/xml" || mt == "application/javascript" || mt == "application/yaml" ||
		mt == "application/toml" || mt == "application/x-sh"
}
