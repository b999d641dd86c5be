package tools_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/tools/docread/docreadtest"
)

// pdfResult checks the blocks of a PDF read and returns the page widths
// of the returned document.
func pdfResult(t *testing.T, res *tools.Result) ([]byte, []int) {
	t.Helper()
	if len(res.Blocks) != 2 || res.Blocks[0].Type != "text" || res.Blocks[1].Type != "document" || res.Blocks[1].MediaType != "application/pdf" {
		t.Fatalf("blocks %+v", res.Blocks)
	}
	data, err := base64.StdEncoding.DecodeString(res.Blocks[1].Data)
	if err != nil {
		t.Fatal(err)
	}
	dims, err := api.PageDims(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatalf("returned document does not parse: %v", err)
	}
	var widths []int
	for _, d := range dims {
		widths = append(widths, int(d.Width))
	}
	return data, widths
}

func TestReadPDFWhole(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	data := docreadtest.PDF(3)
	rdWrite(t, dir, "doc.pdf", data)
	res := rdOK(t, env, map[string]any{"file_path": "doc.pdf"})
	got, widths := pdfResult(t, res)
	if !bytes.Equal(got, data) || fmt.Sprint(widths) != "[101 102 103]" {
		t.Fatalf("widths %v, same bytes %v", widths, bytes.Equal(got, data))
	}
	if text := res.Blocks[0].Text; !strings.Contains(text, "all 3 pages") {
		t.Fatalf("text %q", text)
	}
	if e := rdEntry(t, env, res); e.Partial || e.View != "all pages" || e.Hash != tools.HashBytes(data) {
		t.Fatalf("entry %+v", e)
	}
	// Named .txt, still a PDF; pages covering every page are the whole file.
	rdWrite(t, dir, "doc.txt", data)
	res = rdOK(t, env, map[string]any{"file_path": "doc.txt", "pages": "1-3"})
	if got, _ := pdfResult(t, res); !bytes.Equal(got, data) {
		t.Fatal("pages 1-3 of 3 were re-written")
	}
	if e := rdEntry(t, env, res); e.Partial {
		t.Fatal("all pages read as partial")
	}
}

func TestReadPDFPages(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "long.pdf", docreadtest.PDF(12))
	for _, c := range []struct {
		pages, widths, text string
	}{
		{"2-3", "[102 103]", "pages 2-3 of 12 (2 pages)"},
		{"5", "[105]", "page 5 of 12,"},
		{" 1 , 3-4 ", "[101 103 104]", "pages 1,3-4 of 12 (3 pages)"},
		{"4-6,5-7", "[104 105 106 107]", "pages 4-7 of 12"},
	} {
		res := rdOK(t, env, map[string]any{"file_path": "long.pdf", "pages": c.pages})
		_, widths := pdfResult(t, res)
		if fmt.Sprint(widths) != c.widths || !strings.Contains(res.Blocks[0].Text, c.text) {
			t.Errorf("pages %q: widths %v, text %q", c.pages, widths, res.Blocks[0].Text)
		}
		if e := rdEntry(t, env, res); !e.Partial {
			t.Errorf("pages %q: not partial", c.pages)
		}
	}
	// Same pages again: a stub.
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "long.pdf", "pages": "4-7"})); !strings.Contains(got, "unchanged") {
		t.Fatalf("repeat: %q", got)
	}
}

func TestReadPDFBadPages(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "long.pdf", docreadtest.PDF(12))
	rdWrite(t, dir, "huge.pdf", docreadtest.PDF(30))
	for _, c := range []struct {
		file, pages, want string
	}{
		{"long.pdf", "", "pages=\"1-12\""},
		{"long.pdf", "5-3", "reversed"},
		{"long.pdf", "0", "\"0\" is not a page number"},
		{"long.pdf", "abc", "not a page number"},
		{"long.pdf", "1-", "not a page number"},
		{"long.pdf", "1,,2", "not a page number"},
		{"long.pdf", "13", "within 1-12"},
		{"long.pdf", "10-14", "within 1-12"},
		{"huge.pdf", "1-21", "at most 20 pages"},
		{"huge.pdf", "1-10,15-25", "at most 20 pages"},
	} {
		in := map[string]any{"file_path": c.file}
		if c.pages != "" {
			in["pages"] = c.pages
		}
		_, err := rdRun(t, env, in)
		if msg := rdCode(t, err, tools.CodeBadPages); !strings.Contains(msg, c.want) {
			t.Errorf("%s pages %q: %q lacks %q", c.file, c.pages, msg, c.want)
		}
	}
	// No pages on a PDF past the threshold: the message says how.
	_, err := rdRun(t, env, map[string]any{"file_path": "huge.pdf"})
	if msg := rdCode(t, err, tools.CodeBadPages); !strings.Contains(msg, "30 pages") || !strings.Contains(msg, "pages=\"1-20\"") {
		t.Fatalf("message %q", msg)
	}
	// 20 pages is allowed.
	res := rdOK(t, env, map[string]any{"file_path": "huge.pdf", "pages": "11-30"})
	if _, widths := pdfResult(t, res); len(widths) != 20 {
		t.Fatalf("%d pages", len(widths))
	}
	// offset/limit do not apply to PDFs.
	_, err = rdRun(t, env, map[string]any{"file_path": "long.pdf", "offset": 2})
	rdCode(t, err, tools.CodeInvalidInput)
}

func TestReadPDFCorrupt(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "bad.pdf", []byte("%PDF-1.7\nthis is not a pdf at all\n"))
	good := docreadtest.PDF(2)
	rdWrite(t, dir, "trunc.pdf", good[:len(good)/3])
	for _, name := range []string{"bad.pdf", "trunc.pdf"} {
		_, err := rdRun(t, env, map[string]any{"file_path": name})
		if msg := rdCode(t, err, tools.CodeEncoding); !strings.Contains(msg, "cannot be parsed") {
			t.Errorf("%s: %q", name, msg)
		}
	}
}
