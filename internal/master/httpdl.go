package master

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The HTTP side of a download that does not depend on where the bytes come
// from: Range and conditional requests (RFC 9110 §13, §14) and the
// response's Content-Disposition (RFC 6266) and Content-Type.
//
// net/http.ServeContent does this for an io.ReadSeeker, but a download is
// a stream from a client over a WebSocket: hiding that behind Seek would
// turn every seek into a round trip, and ServeContent answers several
// ranges with multipart bodies, which the stream's single window does not
// serve. A download answers a single range; a request for several gets the
// whole file (200), which RFC 9110 allows.

// byteRange is the part of a file a response carries: [start, start+length).
type byteRange struct{ start, length int64 }

// rangeAnswer is what a Range header asks of a file of a given size.
type rangeAnswer int

const (
	rangeIgnore        rangeAnswer = iota // absent, another unit, malformed, or several ranges: send it all
	rangeOne                              // one satisfiable range
	rangeUnsatisfiable                    // 416
)

// parseRange interprets the value of a Range header for a file of size
// bytes. It accepts one byte range (first-last, first-, -suffix), ignores
// empty list elements and the whitespace around list elements, and treats
// numbers too large for int64 by their meaning (a first byte past any
// file is unsatisfiable; a last byte or suffix that large means "to the
// end"). Syntax it does not accept makes it ignore the header.
func parseRange(h string, size int64) (byteRange, rangeAnswer) {
	unit, set, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return byteRange{}, rangeIgnore
	}
	var spec string
	n := 0
	for _, el := range strings.Split(set, ",") {
		el = strings.Trim(el, " \t")
		if el == "" {
			continue
		}
		spec = el
		n++
	}
	if n != 1 {
		return byteRange{}, rangeIgnore
	}
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return byteRange{}, rangeIgnore
	}
	if first == "" { // suffix-range: the last N bytes
		n, ok := parseDigits(last)
		switch {
		case !ok:
			return byteRange{}, rangeIgnore
		case n == 0 || size == 0:
			return byteRange{}, rangeUnsatisfiable
		}
		n = min(n, size)
		return byteRange{size - n, n}, rangeOne
	}
	start, ok := parseDigits(first)
	if !ok {
		return byteRange{}, rangeIgnore
	}
	end := int64(-1) // last-pos absent: to the end
	if last != "" {
		if end, ok = parseDigits(last); !ok || end < start {
			return byteRange{}, rangeIgnore
		}
	}
	if start >= size {
		return byteRange{}, rangeUnsatisfiable
	}
	if end < 0 || end >= size {
		end = size - 1
	}
	return byteRange{start, end - start + 1}, rangeOne
}

// parseDigits parses 1*DIGIT; a value past int64 saturates at MaxInt64,
// which no file reaches.
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (1<<63-1-int64(c-'0'))/10 {
			n = 1<<63 - 1
			continue
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// entityTags splits an If-None-Match or If-Range value into its entity tags
// (W/"x" or "x", kept as written); "*" comes back as itself. Elements that
// are not entity tags are dropped.
func entityTags(h string) []string {
	var out []string
	for h = strings.Trim(h, " \t"); h != ""; h = strings.TrimLeft(h, " \t,") {
		if h[0] == '*' {
			out = append(out, "*")
			h = h[1:]
			continue
		}
		tag := h
		weak := strings.HasPrefix(tag, "W/")
		if weak {
			tag = tag[2:]
		}
		if tag == "" || tag[0] != '"' {
			// Not an entity tag: skip to the next element.
			i := strings.IndexByte(h, ',')
			if i < 0 {
				break
			}
			h = h[i:]
			continue
		}
		j := strings.IndexByte(tag[1:], '"')
		if j < 0 {
			break
		}
		n := j + 2
		if weak {
			n += 2
		}
		out = append(out, h[:n])
		h = h[n:]
	}
	return out
}

// weakMatch compares entity tags ignoring W/ (RFC 9110 §8.8.3.2).
func weakMatch(a, b string) bool {
	return strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}

// responsePlan is how a download answers: its status and, for 200 and 206,
// the part of the file it sends.
type responsePlan struct {
	status int
	part   byteRange
}

// planResponse decides a download's answer from its method and headers for
// a file of size bytes with the (strong, quoted) entity tag etag and the
// modification time mod, in RFC 9110 §13.2.2's order: If-None-Match (or,
// without it, If-Modified-Since), then Range under If-Range.
func planResponse(method string, h http.Header, size int64, etag string, mod time.Time) responsePlan {
	whole := responsePlan{http.StatusOK, byteRange{0, size}}
	if v := h.Values("If-None-Match"); len(v) > 0 {
		for _, t := range entityTags(strings.Join(v, ",")) {
			if t == "*" || weakMatch(t, etag) {
				return responsePlan{status: http.StatusNotModified}
			}
		}
	} else if ims, err := http.ParseTime(h.Get("If-Modified-Since")); err == nil && !mod.IsZero() &&
		!mod.Truncate(time.Second).After(ims) {
		return responsePlan{status: http.StatusNotModified}
	}
	rh := h.Get("Range")
	if rh == "" || method != http.MethodGet && method != http.MethodHead {
		return whole
	}
	if ir := h.Get("If-Range"); ir != "" && !ifRangeHolds(ir, etag, mod) {
		return whole
	}
	part, ans := parseRange(rh, size)
	switch ans {
	case rangeOne:
		return responsePlan{http.StatusPartialContent, part}
	case rangeUnsatisfiable:
		return responsePlan{status: http.StatusRequestedRangeNotSatisfiable}
	}
	return whole
}

// ifRangeHolds evaluates If-Range: an entity tag must match strongly (a
// weak one never does); a date must equal the modification time.
func ifRangeHolds(v, etag string, mod time.Time) bool {
	v = strings.Trim(v, " \t")
	if strings.HasPrefix(v, `"`) {
		tags := entityTags(v)
		return len(tags) == 1 && tags[0] == etag
	}
	if strings.HasPrefix(v, "W/") {
		return false
	}
	t, err := http.ParseTime(v)
	return err == nil && !mod.IsZero() && mod.Truncate(time.Second).Equal(t)
}

// maxFileNameBytes bounds the file name a download offers.
const maxFileNameBytes = 200

// safeFileName is the name a download offers for an artifact's file name:
// never empty, valid UTF-8, without path separators, control characters
// or the invisible and bidirectional formatting characters that could
// disguise an extension (a right-to-left override turns "invoice<RLO>fdp.exe"
// into what reads as "invoiceexe.pdf"), at most maxFileNameBytes.
func safeFileName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(name, "\uFFFD") {
		switch {
		case r == '/' || r == '\\':
			r = '_'
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
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

// contentDisposition is an attachment header naming the file (RFC 6266):
// filename with an ASCII stand-in for old clients, filename* with the
// UTF-8 name (RFC 8187) for the others. Always an attachment: a download
// is never rendered by the browser on the master's origin.
func contentDisposition(name string) string {
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

// contentType is the Content-Type of a download: the artifact's media type
// when it is a well-formed type/subtype, else application/octet-stream.
func contentType(mimeType string) string {
	mt, params, err := mime.ParseMediaType(mimeType)
	if err != nil || !strings.Contains(mt, "/") {
		return "application/octet-stream"
	}
	if s := mime.FormatMediaType(mt, params); s != "" {
		return s
	}
	return "application/octet-stream"
}
