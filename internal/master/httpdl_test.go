package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

func TestParseRange(t *testing.T) {
	const size = 1000
	cases := []struct {
		h     string
		ans   rangeAnswer
		start int64
		n     int64
	}{
		{"bytes=0-499", rangeOne, 0, 500},
		{"bytes=500-", rangeOne, 500, 500},
		{"bytes=-200", rangeOne, 800, 200},
		{"bytes=-5000", rangeOne, 0, 1000},
		{"bytes=990-5000", rangeOne, 990, 10},
		{"bytes=999-999", rangeOne, 999, 1},
		{"BYTES=1-2", rangeOne, 1, 2},
		{"bytes= 1-2 ", rangeOne, 1, 2},
		{"bytes=1-2,", rangeOne, 1, 2},
		{"bytes=, ,1-2", rangeOne, 1, 2},
		{"bytes=0-99999999999999999999999", rangeOne, 0, 1000},
		{"bytes=-99999999999999999999999", rangeOne, 0, 1000},
		{"bytes=000-001", rangeOne, 0, 2},
		{"bytes=1000-", rangeUnsatisfiable, 0, 0},
		{"bytes=1000-2000", rangeUnsatisfiable, 0, 0},
		{"bytes=99999999999999999999999-", rangeUnsatisfiable, 0, 0},
		{"bytes=-0", rangeUnsatisfiable, 0, 0},
		{"", rangeIgnore, 0, 0},
		{"bytes=", rangeIgnore, 0, 0},
		{"bytes=5-1", rangeIgnore, 0, 0},
		{"bytes=0-1,5-6", rangeIgnore, 0, 0},
		{"bytes=1-2-3", rangeIgnore, 0, 0},
		{"bytes=a-b", rangeIgnore, 0, 0},
		{"bytes=+1-2", rangeIgnore, 0, 0},
		{"bytes=1 -2", rangeIgnore, 0, 0},
		{"bytes=-", rangeIgnore, 0, 0},
		{"items=0-1", rangeIgnore, 0, 0},
		{"bytes 0-1", rangeIgnore, 0, 0},
	}
	for _, tc := range cases {
		r, ans := parseRange(tc.h, size)
		if ans != tc.ans || ans == rangeOne && (r.start != tc.start || r.length != tc.n) {
			t.Errorf("parseRange(%q) = %v %+v, want %v [%d,+%d)", tc.h, ans, r, tc.ans, tc.start, tc.n)
		}
	}
	if _, ans := parseRange("bytes=0-", 0); ans != rangeUnsatisfiable {
		t.Error("a range of an empty file must be unsatisfiable")
	}
	if _, ans := parseRange("bytes=-1", 0); ans != rangeUnsatisfiable {
		t.Error("a suffix of an empty file must be unsatisfiable")
	}
}

func TestPlanResponse(t *testing.T) {
	const size = 100
	etag := `"v1"`
	mod := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	lm := mod.Format(http.TimeFormat)
	cases := []struct {
		name   string
		method string
		h      map[string]string
		status int
		start  int64
		n      int64
	}{
		{"plain", "GET", nil, 200, 0, 100},
		{"range", "GET", map[string]string{"Range": "bytes=10-19"}, 206, 10, 10},
		{"range on HEAD", "HEAD", map[string]string{"Range": "bytes=10-19"}, 206, 10, 10},
		{"unsatisfiable", "GET", map[string]string{"Range": "bytes=100-"}, 416, 0, 0},
		{"invalid range ignored", "GET", map[string]string{"Range": "bytes=x"}, 200, 0, 100},
		{"several ranges ignored", "GET", map[string]string{"Range": "bytes=0-1,3-4"}, 200, 0, 100},
		{"if-none-match hit", "GET", map[string]string{"If-None-Match": etag}, 304, 0, 0},
		{"if-none-match weak hit", "GET", map[string]string{"If-None-Match": `W/"v1"`}, 304, 0, 0},
		{"if-none-match in a list", "GET", map[string]string{"If-None-Match": `"a", W/"b" ,"v1"`}, 304, 0, 0},
		{"if-none-match star", "GET", map[string]string{"If-None-Match": "*"}, 304, 0, 0},
		{"if-none-match miss", "GET", map[string]string{"If-None-Match": `"v0"`}, 200, 0, 100},
		{"if-none-match miss ignores if-modified-since", "GET", map[string]string{"If-None-Match": `"v0"`, "If-Modified-Since": lm}, 200, 0, 100},
		{"if-none-match beats range", "GET", map[string]string{"If-None-Match": etag, "Range": "bytes=0-1"}, 304, 0, 0},
		{"if-modified-since same second", "GET", map[string]string{"If-Modified-Since": lm}, 304, 0, 0},
		{"if-modified-since earlier", "GET", map[string]string{"If-Modified-Since": mod.Add(-time.Second).Format(http.TimeFormat)}, 200, 0, 100},
		{"if-range etag holds", "GET", map[string]string{"Range": "bytes=50-", "If-Range": etag}, 206, 50, 50},
		{"if-range etag changed", "GET", map[string]string{"Range": "bytes=50-", "If-Range": `"v0"`}, 200, 0, 100},
		{"if-range weak never holds", "GET", map[string]string{"Range": "bytes=50-", "If-Range": `W/"v1"`}, 200, 0, 100},
		{"if-range date holds", "GET", map[string]string{"Range": "bytes=50-", "If-Range": lm}, 206, 50, 50},
		{"if-range date changed", "GET", map[string]string{"Range": "bytes=50-", "If-Range": mod.Add(time.Hour).Format(http.TimeFormat)}, 200, 0, 100},
		{"if-range garbage", "GET", map[string]string{"Range": "bytes=50-", "If-Range": "yesterday"}, 200, 0, 100},
		{"if-range without a range", "GET", map[string]string{"If-Range": etag}, 200, 0, 100},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		p := planResponse(tc.method, h, size, etag, mod)
		if p.status != tc.status || (p.status == 200 || p.status == 206) && (p.part.start != tc.start || p.part.length != tc.n) {
			t.Errorf("%s: %+v, want %d [%d,+%d)", tc.name, p, tc.status, tc.start, tc.n)
		}
	}
}

func TestContentDisposition(t *testing.T) {
	cases := map[string]struct{ ascii, name string }{
		"report.csv":              {"report.csv", "report.csv"},
		"sales report.csv":        {"sales report.csv", "sales report.csv"},
		"résumé 2026.pdf":         {"r_sum_ 2026.pdf", "résumé 2026.pdf"},
		"日本語.txt":                 {"___.txt", "日本語.txt"},
		`quote"back\slash.txt`:    {"quote_back_slash.txt", `quote"back_slash.txt`},
		"percent%41.txt":          {"percent_41.txt", "percent%41.txt"},
		"../../etc/passwd":        {".._.._etc_passwd", ".._.._etc_passwd"},
		"crlf\r\nSet-Cookie: x=y": {"crlfSet-Cookie: x=y", "crlfSet-Cookie: x=y"},
		"invoice\u202efdp.exe":    {"invoicefdp.exe", "invoicefdp.exe"},
		"":                        {"download", "download"},
		"..":                      {"download", "download"},
		"name. ":                  {"name", "name"},
		"bad\xffutf8":             {"bad_utf8", "bad\uFFFDutf8"},
	}
	for in, want := range cases {
		cd := contentDisposition(in)
		disp, params, err := mime.ParseMediaType(cd)
		if err != nil || disp != "attachment" {
			t.Errorf("%q: %q does not parse as an attachment: %v", in, cd, err)
			continue
		}
		// mime decodes filename* and prefers it.
		if params["filename"] != want.name {
			t.Errorf("%q: filename* decodes to %q, want %q", in, params["filename"], want.name)
		}
		if !strings.Contains(cd, `filename="`+want.ascii+`"`) {
			t.Errorf("%q: %q lacks the ASCII fallback %q", in, cd, want.ascii)
		}
	}
	long := strings.Repeat("é", 300)
	if n := len(safeFileName(long)); n > maxFileNameBytes || !utf8.ValidString(safeFileName(long)) {
		t.Errorf("a long name gives %d bytes", n)
	}
}

// FuzzContentDisposition: for any name, the header is one line of
// printable ASCII that parses as an attachment, its filename* decodes to
// the safe name, and the safe name is valid UTF-8 without separators or
// control and format characters.
func FuzzContentDisposition(f *testing.F) {
	for _, s := range []string{"report.csv", "résumé.pdf", "a/b\\c", "x\r\ny", "\u202e", "", "..", "%", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		safe := safeFileName(name)
		if safe == "" || !utf8.ValidString(safe) || len(safe) > maxFileNameBytes || strings.ContainsAny(safe, "/\\") {
			t.Fatalf("safeFileName(%q) = %q", name, safe)
		}
		for _, r := range safe {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("safeFileName(%q) keeps %U", name, r)
			}
		}
		cd := contentDisposition(name)
		for i := range len(cd) {
			if cd[i] < 0x20 || cd[i] > 0x7e {
				t.Fatalf("the header %q has byte %#x", cd, cd[i])
			}
		}
		disp, params, err := mime.ParseMediaType(cd)
		if err != nil || disp != "attachment" || params["filename"] != safe {
			t.Fatalf("%q parses to %q %q (%v), want filename %q", cd, disp, params, err, safe)
		}
	})
}

// FuzzParseRange: the answer is always well formed, and wherever this
// parser serves one range, net/http's ServeContent (the reference for
// byte ranges in Go) serves the same bytes for the same header.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-1", "bytes=-5", "bytes=5-", "bytes=0-1,2-3", "bytes=,1-2", "BYTES=1-1", "bytes= 1-2", "bytes=-0", "bytes=99999999999999999999-"} {
		f.Add(s, int64(10))
	}
	content := bytes.Repeat([]byte("0123456789"), 20)
	f.Fuzz(func(t *testing.T, h string, size int64) {
		size = max(0, size%int64(len(content)+1))
		r, ans := parseRange(h, size)
		switch ans {
		case rangeOne:
			if r.start < 0 || r.length < 1 || r.start+r.length > size {
				t.Fatalf("parseRange(%q, %d) = %+v", h, size, r)
			}
		case rangeUnsatisfiable, rangeIgnore:
		default:
			t.Fatalf("parseRange(%q) answered %v", h, ans)
		}
		if ans != rangeOne || !strings.HasPrefix(h, "bytes=") || strings.ContainsAny(h, "\r\n") {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Range", h)
		rec := httptest.NewRecorder()
		http.ServeContent(rec, req, "f", time.Time{}, bytes.NewReader(content[:size]))
		want := fmt.Sprintf("bytes %d-%d/%d", r.start, r.start+r.length-1, size)
		if rec.Code == http.StatusPartialContent && rec.Header().Get("Content-Range") != want {
			t.Fatalf("Range %q of %d: ServeContent sends %q, parseRange %q", h, size, rec.Header().Get("Content-Range"), want)
		}
		if rec.Code == http.StatusPartialContent && !bytes.Equal(rec.Body.Bytes(), content[r.start:r.start+r.length]) {
			t.Fatalf("Range %q: different bytes", h)
		}
	})
}

// TestStreamBoundsItsQueue: a download buffers at most its window; a
// client that sends more (or any data before the range) fails the
// download once what it queued is written, instead of growing memory.
func TestStreamBoundsItsQueue(t *testing.T) {
	id := protocol.NewID()
	chunk := func(off int64) []byte {
		f, err := protocol.AppendArtifactChunk(nil, protocol.ArtifactChunk{RequestID: id, Offset: off, Data: make([]byte, protocol.ArtifactChunkSize)})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctx := context.Background()
	st := &stream{wake: make(chan struct{}, 1)}
	st.deliver(chunk(0))
	if _, err := st.next(ctx, time.Second); !errors.Is(err, errOverflow) {
		t.Fatalf("data before the range: %v, want errOverflow", err)
	}

	st = &stream{wake: make(chan struct{}, 1)}
	st.setWindow(2 * protocol.ArtifactChunkSize)
	for i := range 3 {
		st.deliver(chunk(int64(i) * protocol.ArtifactChunkSize))
	}
	for i := range 2 {
		it, err := st.next(ctx, time.Second)
		if err != nil || it.chunk.Offset != int64(i)*protocol.ArtifactChunkSize {
			t.Fatalf("queued chunk %d: %+v, %v", i, it.chunk.Offset, err)
		}
	}
	if _, err := st.next(ctx, time.Second); !errors.Is(err, errOverflow) {
		t.Fatalf("past the window: %v, want errOverflow", err)
	}
	// Within the window, taking frames makes room for more.
	st = &stream{wake: make(chan struct{}, 1)}
	st.setWindow(protocol.ArtifactChunkSize)
	for i := range 10 {
		st.deliver(chunk(int64(i) * protocol.ArtifactChunkSize))
		if _, err := st.next(ctx, time.Second); err != nil {
			t.Fatalf("chunk %d within the window: %v", i, err)
		}
	}
	st.deliver([]byte(`{"type":"nonsense"}`))
	if _, err := st.next(ctx, time.Second); err == nil {
		t.Fatal("a frame that is neither a message of the download nor data was accepted")
	}
}

// TestFitLinks: a listing whose paths would make the answer too large for
// one message keeps the newest links that fit.
func TestFitLinks(t *testing.T) {
	msg := protocol.New(protocol.TypeArtifactsList, &protocol.ArtifactsList{})
	msg.SessionID = "s"
	links := make([]protocol.ArtifactLink, 1000)
	for i := range links {
		links[i] = protocol.ArtifactLink{Artifact: protocol.Artifact{TurnID: "t", ArtifactID: fmt.Sprintf("art_%d", i),
			Path: strings.Repeat("d/", 2000) + "f", FileName: "f", Size: 1}, DownloadURL: "/v1/artifacts/x",
			RegisteredAt: "2026-01-01T00:00:00Z", ExpiresAt: "2026-01-01T01:00:00Z"}
	}
	keep := fitLinks(msg, links)
	if keep == 0 || keep == len(links) {
		t.Fatalf("kept %d of %d links of about 4 KB each", keep, len(links))
	}
	ans := msg.Reply(protocol.TypeArtifacts, &protocol.Artifacts{Artifacts: links[len(links)-keep:]})
	if _, err := protocol.Encode(ans); err != nil {
		t.Fatalf("the kept links do not fit: %v", err)
	}
	if got := fitLinks(msg, links[:10]); got != 10 {
		t.Fatalf("a small list kept %d of 10", got)
	}
}

// FuzzPlanResponse: whatever the conditional and range headers say, the
// plan is one of the statuses a download answers, a body's part lies in
// the file, and 304 only ever answers a request that asked for it.
func FuzzPlanResponse(f *testing.F) {
	f.Add("bytes=0-1", `"v1"`, "", int64(10))
	f.Add("bytes=5-", "", `"v1"`, int64(10))
	f.Add("", `W/"a", "b", *`, "", int64(0))
	f.Add("bytes=-3", `"unterminated`, `W/"v1"`, int64(7))
	f.Add("bytes=1-2", `,,, "v1" ,`, "Fri, 02 Jan 2026 03:04:05 GMT", int64(100))
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, rng, inm, ifRange string, size int64) {
		size = max(0, size%1_000_000)
		h := http.Header{}
		if rng != "" {
			h.Set("Range", rng)
		}
		if inm != "" {
			h.Set("If-None-Match", inm)
		}
		if ifRange != "" {
			h.Set("If-Range", ifRange)
		}
		p := planResponse(http.MethodGet, h, size, `"v1"`, mod)
		switch p.status {
		case http.StatusOK:
			if p.part != (byteRange{0, size}) {
				t.Fatalf("200 with part %+v of %d", p.part, size)
			}
		case http.StatusPartialContent:
			if rng == "" || p.part.start < 0 || p.part.length < 1 || p.part.start+p.part.length > size {
				t.Fatalf("206 with part %+v of %d for Range %q", p.part, size, rng)
			}
		case http.StatusNotModified:
			if inm == "" {
				t.Fatal("304 without If-None-Match")
			}
		case http.StatusRequestedRangeNotSatisfiable:
			if rng == "" {
				t.Fatal("416 without Range")
			}
		default:
			t.Fatalf("status %d", p.status)
		}
		for _, tag := range entityTags(inm) {
			if tag != "*" && (!strings.HasSuffix(tag, `"`) || !strings.HasPrefix(strings.TrimPrefix(tag, "W/"), `"`)) {
				t.Fatalf("entityTags(%q) gave %q", inm, tag)
			}
		}
	})
}
