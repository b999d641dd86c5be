// Running Grep's scan over the files of a search tree.

package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ferry-dev/ferry/internal/tools/grepscan"
)

// grepRun is one call's search.
type grepRun struct {
	env       *Env
	req       grepRequest
	workspace string
	sc        *grepscan.Scanner
	out       *grepOutput
}

// filesByAge is files_with_matches: the candidates are listed first and
// searched newest first, so the search stops once the page is full.
func (g *grepRun) filesByAge(ctx context.Context, tree *searchTree) error {
	var files []searchFile
	err := tree.walk(ctx, walkOptions{}, func(f searchFile) error {
		if g.req.filter.ok(f.rel) {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sortSearchFiles(files)
	for _, f := range files {
		if g.out.more {
			break
		}
		if _, err := g.file(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// inOrder is content and count modes: files in path order, searched as
// the walk finds them, until the page is full.
func (g *grepRun) inOrder(ctx context.Context, tree *searchTree) error {
	return tree.walk(ctx, walkOptions{}, func(f searchFile) error {
		if !g.req.filter.ok(f.rel) {
			return nil
		}
		if _, err := g.file(ctx, f); err != nil {
			return err
		}
		if g.out.more {
			return fs.SkipAll
		}
		return nil
	})
}

// file searches one file and records what it found. Files that cannot be
// opened (gone, refused) are skipped.
func (g *grepRun) file(ctx context.Context, f searchFile) (grepscan.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return grepscan.Outcome{}, err
	}
	h, err := g.env.FS.Open(f.path)
	if err != nil {
		return grepscan.Outcome{}, nil //nolint:nilerr // an unreadable file is skipped, as ripgrep does
	}
	defer h.Close()
	var emit func(grepscan.Line) error
	switch g.req.mode {
	case grepContent:
		emit = func(l grepscan.Line) error {
			if g.out.line(f.display, l) {
				return grepscan.ErrStop
			}
			return nil
		}
	case grepFiles:
		emit = func(grepscan.Line) error { return grepscan.ErrStop }
	default:
		emit = func(grepscan.Line) error { return nil }
	}
	outcome, err := g.sc.Scan(ctx, h, emit)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return outcome, err
		}
		return outcome, nil // a read error mid-file: skip the file
	}
	if outcome.TooLarge {
		g.out.tooLarge++
	}
	if outcome.Matches > 0 {
		switch g.req.mode {
		case grepFiles:
			g.out.entry(f.display)
		case grepCount:
			g.out.files++
			g.out.total += outcome.Matches
			g.out.entry(fmt.Sprintf("%s:%d", f.display, outcome.Matches))
		}
	}
	return outcome, nil
}
