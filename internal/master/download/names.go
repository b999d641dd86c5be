package download

import (
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

// maxFileNameBytes bounds the file name a download offers.
const maxFileNameBytes = 200

// safeFileName is the name a download offers for an artifact's file name:
// never empty, valid UTF-8, without path separators or the characters no
// name may hold (protocol.HiddenRune: control characters, and the invisible
// and bidirectional formatting characters that could disguise an
// extension: a right-to-left override turns "invoice<RLO>fdp.exe" into what
// reads as "invoiceexe.pdf"), at most maxFileNameBytes.
func safeFileName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(name, "\uFFFD") {
		switch {
		case r == '/' || r == '\\':
			r = '_'
		case protocol.HiddenRune(r):
			continue
		}
		if b.Len()+utf8.RuneLen(r) > maxFileNameBytes {
			break
		}
		b.WriteRune(r)
	}
	// Windows drops trailing dots and spaces; "." and ".." are no names.
	s := strings.TrimRight(strings.TrimLeft(b.String(), " "), " .")
	if s == "" {
		return "download"
	}
	return s
}

// ContentDisposition is an attachment header naming the file (RFC 6266):
// filename with an ASCII stand-in for old clients, filename* with the
// UTF-8 name (RFC 8187) for the others. Always an attachment: a download
// is never rendered by the browser on the master's origin.
func ContentDisposition(name string) string {
	name = safeFileName(name)
	var ascii, ext strings.Builder
	for _, r := range name {
		switch {
		case r >= 0x20 && r < 0x7f && r != '"' && r != '\\' && r != '%':
			ascii.WriteRune(r)
		default:
			ascii.WriteByte('_')
		}
	}
	for _, c := range []byte(name) {
		if isAttrChar(c) {
			ext.WriteByte(c)
		} else {
			ext.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
		}
	}
	return `attachment; filename="` + ascii.String() + `"; filename*=UTF-8''` + ext.String()
}

// isAttrChar is RFC 8187's attr-char: what filename* carries unescaped.
func isAttrChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}

// ContentType is the Content-Type of a download: the artifact's media type
// when it is a well-formed type/subtype, else application/octet-stream.
func ContentType(mimeType string) string {
	mt, params, err := mime.ParseMediaType(mimeType)
	if err != nil || !strings.Contains(mt, "/") {
		return "application/octet-stream"
	}
	if s := mime.FormatMediaType(mt, params); s != "" {
		return s
	}
	return "application/octet-stream"
}
