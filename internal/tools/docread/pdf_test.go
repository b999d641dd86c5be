package docread

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// minimalPDF is a valid PDF of n pages, page i 101+i points wide.
func minimalPDF(n int) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n")
	var kids []string
	for i := range n {
		kids = append(kids, fmt.Sprintf("%d 0 R", 3+2*i))
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	for i := range n {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d 200] /Contents %d 0 R /Resources << >> >>", 101+i, 4+2*i))
		content := fmt.Sprintf("%d 10 m %d 190 l S", 10+i, 10+i)
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// Extracted pages make a PDF of their own; damage is an error, not a panic.
func TestPDFLoadAndExtract(t *testing.T) {
	t.Parallel()
	doc, err := LoadPDF(bytes.NewReader(minimalPDF(5)))
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
