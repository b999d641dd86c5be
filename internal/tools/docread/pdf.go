package docread

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/validate"
)

var pdfConfigOnce sync.Once

// pdfConfig is pdfcpu's default configuration without its config
// directory: pdfcpu would otherwise create one under the user's config
// directory on first use. Read needs no user fonts.
func pdfConfig() *model.Configuration {
	pdfConfigOnce.Do(func() { model.ConfigPath = "disable" })
	conf := model.NewDefaultConfiguration()
	conf.Cmd = model.TRIM
	return conf
}

// PDF is a parsed PDF.
type PDF struct{ ctx *model.Context }

// PageCount is the number of pages.
func (d *PDF) PageCount() int { return d.ctx.PageCount }

// LoadPDF parses a PDF. pdfcpu reports most damage as errors, some as
// panics: both become the same clear error.
func LoadPDF(rs io.ReadSeeker) (*PDF, error) {
	ctx, err := loadPDF(rs)
	if err != nil {
		return nil, err
	}
	return &PDF{ctx}, nil
}

func loadPDF(rs io.ReadSeeker) (ctx *model.Context, err error) {
	defer func() {
		if p := recover(); p != nil {
			ctx, err = nil, fmt.Errorf("pdfcpu: %v", p)
		}
	}()
	// pdfcpu's api package would do these three steps, but importing it
	// pulls in its form support, whose go-runewidth dependency spends ~50 ms
	// in package init: every ferry command would start that much slower.
	ctx, err = pdfcpu.Read(rs, pdfConfig())
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if err := validate.XRefTable(ctx); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if err := pdfcpu.OptimizeXRefTable(ctx); err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	return ctx, nil
}

// ExtractPages writes a new PDF of the given pages (1-based) of d.
func (d *PDF) ExtractPages(pages []int) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, fmt.Errorf("pdfcpu: %v", p)
		}
	}()
	dest, err := pdfcpu.ExtractPages(d.ctx, pages, false)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	dest.Write.Writer = w
	if err := pdfcpu.WriteContext(dest); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
