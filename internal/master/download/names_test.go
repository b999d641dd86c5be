package download

import (
	"mime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

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
		cd := ContentDisposition(in)
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
		cd := ContentDisposition(name)
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
