package docread

import (
	"bytes"
	"testing"

	"github.com/ferry-dev/ferry/internal/tools/docread/docreadtest"
)

// Extracted pages make a PDF of their own; damage is an error, not a panic.
func TestPDFLoadAndExtract(t *testing.T) {
	t.Parallel()
	doc, err := LoadPDF(bytes.NewReader(docreadtest.PDF(5)))
	if err != nil {
		t.Fatal(err)
	}
	if n := doc.PageCount(); n != 5 {
		t.Fatalf("PageCount = %d", n)
	}
	data, err := doc.ExtractPages([]int{2, 4})
	if err != nil {
		t.Fatal(err)
	}
	part, err := LoadPDF(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("extracted pages do not parse: %v", err)
	}
	if n := part.PageCount(); n != 2 {
		t.Fatalf("extracted PageCount = %d", n)
	}
	if _, err := LoadPDF(bytes.NewReader([]byte("%PDF-1.4\ngarbage"))); err == nil {
		t.Fatal("a damaged PDF loaded")
	}
}
