package tools

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ferry-dev/ferry/internal/tools/docread"
)

// PDF bounds. PDFs are recognised by their "%PDF-" header, never by name.
const (
	// maxPDFFileBytes bounds the PDF Read parses (pdfcpu holds its objects
	// in memory).
	maxPDFFileBytes = 100 << 20
	// maxDocumentBytes bounds the document returned: 20 MiB is under 27 MiB
	// base64-encoded, inside the providers' 32 MB request cap.
	maxDocumentBytes = 20 << 20
)

// pageRange is pages from..to, 1-based, inclusive.
type pageRange struct{ from, to int }

func badPages(given, why string) error {
	return Errorf(CodeBadPages, "pages %q is not a valid page selection (%s). Use \"3\" for one page, \"1-5\" for a range, or \"1,3-4\" for several; pages count from 1.", given, why)
}

// parsePages parses a page selection: a comma-separated list of page
// numbers ("3") and ranges ("1-5"), spaces allowed around each. Ranges
// must not be reversed; overlapping ones are merged. The result is sorted.
func parsePages(s string) ([]pageRange, error) {
	if strings.TrimSpace(s) == "" {
		return nil, badPages(s, "it is empty")
	}
	var out []pageRange
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		from, to, isRange := strings.Cut(item, "-")
		a, err := parsePageNumber(from)
		if err != nil {
			return nil, badPages(s, fmt.Sprintf("%q is not a page number", strings.TrimSpace(from)))
		}
		b := a
		if isRange {
			if b, err = parsePageNumber(to); err != nil {
				return nil, badPages(s, fmt.Sprintf("%q is not a page number", strings.TrimSpace(to)))
			}
			if b < a {
				return nil, badPages(s, fmt.Sprintf("the range %d-%d is reversed; write %d-%d", a, b, b, a))
			}
		}
		out = append(out, pageRange{a, b})
	}
	slices.SortFunc(out, func(x, y pageRange) int { return x.from - y.from })
	merged := out[:1]
	for _, r := range out[1:] {
		last := &merged[len(merged)-1]
		if r.from <= last.to+1 {
			last.to = max(last.to, r.to)
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}

func parsePageNumber(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, strconv.ErrRange
	}
	return n, nil
}

// formatPages writes a selection back, normalised: "1,3-4".
func formatPages(ranges []pageRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = strconv.Itoa(r.from)
		if r.to != r.from {
			parts[i] += "-" + strconv.Itoa(r.to)
		}
	}
	return strings.Join(parts, ",")
}

func pageTotal(ranges []pageRange) int {
	n := 0
	for _, r := range ranges {
		n += r.to - r.from + 1
	}
	return n
}

// pdfView names a PDF read in the read state.
func pdfView(pagesText string) string {
	if pagesText == "" {
		return "all pages"
	}
	return "pages " + pagesText
}

// pdf reads a PDF: all of it when it is short, else the pages asked for,
// extracted into a new PDF and returned as a document block.
func (rc *readCall) pdf() (*Result, error) {
	view := pdfView(rc.req.pagesText)
	if stub := rc.dedup(view); stub != nil {
		return stub, nil
	}
	size := rc.info.Stamp.Size
	if size > maxPDFFileBytes {
		return nil, Errorf(CodeTooLarge, "%s is a PDF of %s, over the %s Read parses. Split it with a PDF tool first, or extract its text with one.",
			rc.name, formatBytes(size), formatBytes(maxPDFFileBytes))
	}
	doc, err := docread.LoadPDF(io.NewSectionReader(rc.f, 0, size))
	if err != nil {
		return nil, &Error{Code: CodeEncoding, Err: err, Message: fmt.Sprintf(
			"%s starts like a PDF but cannot be parsed (%v); it may be corrupt, truncated or encrypted.", rc.name, err)}
	}
	n := doc.PageCount()
	if n < 1 {
		return nil, Errorf(CodeEncoding, "%s is a PDF without pages; there is nothing to read.", rc.name)
	}
	maxPages := rc.limits.MaxPDFPagesPerCall
	ranges := rc.req.pages
	if ranges == nil {
		if n > rc.limits.PDFPagesRequiredAbove {
			return nil, Errorf(CodeBadPages, "%s has %d pages, more than the %d Read returns without a page selection. Pass pages, e.g. pages=\"1-%d\" (at most %d pages a call).",
				rc.name, n, rc.limits.PDFPagesRequiredAbove, min(n, maxPages), maxPages)
		}
		ranges = []pageRange{{1, n}}
	}
	if last := ranges[len(ranges)-1].to; last > n {
		return nil, Errorf(CodeBadPages, "%s has %d pages, so page %d does not exist; pages must be within 1-%d.", rc.name, n, last, n)
	}
	if total := pageTotal(ranges); total > maxPages {
		return nil, Errorf(CodeBadPages, "pages %q selects %d pages; Read returns at most %d pages a call. Read it in parts, e.g. pages=\"%d-%d\" first.",
			formatPages(ranges), total, maxPages, ranges[0].from, min(n, ranges[0].from+maxPages-1))
	}
	all := len(ranges) == 1 && ranges[0].from == 1 && ranges[0].to == n

	var data []byte
	if all {
		// The file itself: nothing is lost to re-writing it.
		if size > maxDocumentBytes {
			return nil, rc.pdfTooLarge(size, n)
		}
		data = make([]byte, size)
		if _, err := rc.f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, readFSError(rc.env.FS, rc.name, err)
		}
	} else {
		var pages []int
		for _, r := range ranges {
			for p := r.from; p <= r.to; p++ {
				pages = append(pages, p)
			}
		}
		if data, err = doc.ExtractPages(pages); err != nil {
			return nil, &Error{Code: CodeEncoding, Err: err, Message: fmt.Sprintf(
				"the pages %s of %s cannot be extracted (%v); the PDF may be damaged. Try other pages.", formatPages(ranges), rc.name, err)}
		}
		if len(data) > maxDocumentBytes {
			return nil, rc.pdfTooLarge(int64(len(data)), pageTotal(ranges))
		}
	}
	hash, err := rc.hashFile()
	if err != nil {
		return nil, err
	}
	rc.record(view, !all, hash)
	what := fmt.Sprintf("all %d pages", n)
	if n == 1 {
		what = "its one page"
	}
	if !all {
		what = fmt.Sprintf("pages %s of %d (%s)", formatPages(ranges), n, countOf(pageTotal(ranges), "page", "pages"))
		if pageTotal(ranges) == 1 {
			what = fmt.Sprintf("page %s of %d", formatPages(ranges), n)
		}
	}
	return rc.result([]Block{
		{Type: "text", Text: fmt.Sprintf("PDF %s: %s, attached as a document.", rc.name, what)},
		{Type: "document", MediaType: "application/pdf", Data: base64.StdEncoding.EncodeToString(data)},
	}), nil
}

func (rc *readCall) pdfTooLarge(size int64, pages int) error {
	return Errorf(CodeTooLarge, "the selected %d page(s) of %s come to %s, over the %s one Read returns. Ask for fewer pages at a time.",
		pages, rc.name, formatBytes(size), formatBytes(maxDocumentBytes))
}
