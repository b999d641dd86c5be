package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/search/index"
	"github.com/ferry-dev/ferry/protocol"
)

func runSearch(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry search", flag.ContinueOnError)
	dir := fs.String("dir", ".", "search the files of `DIR` (with its ignore rules)")
	stdin := fs.Bool("stdin", false, "rank the paths read from standard input (one per line) instead of a folder")
	asJSON := fs.Bool("json", false, "print the session.file.candidates payload")
	limit := fs.Int("limit", protocol.DefaultMaxResults, "how many results (at most 50)")
	exts := fs.String("ext", "", "only these extensions, comma-separated (e.g. .go,.ts)")
	var excludes stringList
	fs.Var(&excludes, "exclude", "leave out paths matching `GLOB` (doublestar; repeatable)")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry search [--dir DIR] [--stdin] [--json] [--limit N] [--ext .go,.ts] [--exclude GLOB] QUERY",
		"\nRanks files by fuzzy match with QUERY, as the @ picker does, and prints the",
		"paths best first. An empty QUERY lists the most recently modified files.",
	); !ok {
		return err
	}
	if *limit < 1 || *limit > protocol.MaxResultsCap {
		return usageErrorf("ferry search: --limit must be between 1 and %d", protocol.MaxResultsCap)
	}
	query := strings.Join(fs.Args(), " ")
	req := &protocol.FileSearch{QueryID: protocol.NewID(), Query: query, Scope: protocol.ScopeWorkspace, MaxResults: limit}
	if *exts != "" || len(excludes) > 0 {
		req.Filters = &protocol.SearchFilters{ExcludePatterns: excludes}
		for _, e := range strings.Split(*exts, ",") {
			if e = strings.TrimSpace(e); e != "" {
				req.Filters.Extensions = append(req.Filters.Extensions, e)
			}
		}
	}

	var ws *search.Workspace
	if *stdin {
		paths, err := readLines(env.Stdin)
		if err != nil {
			return fmt.Errorf("ferry search: read standard input: %w", err)
		}
		ws = &search.Workspace{Name: "stdin", Index: search.Static{Snap: index.FromPaths(paths)}}
	} else {
		root, err := filepath.Abs(*dir)
		if err == nil {
			root, err = filepath.EvalSymlinks(root)
		}
		if err != nil {
			return fmt.Errorf("ferry search: %w", err)
		}
		ix, err := index.Open(ctx, root, index.Options{Mode: index.Static, Progress: progressPrinter(env.Stderr)})
		if err != nil {
			return fmt.Errorf("ferry search: %w", err)
		}
		defer func() { _ = ix.Close() }()
		if err := ix.Wait(ctx); err != nil {
			return fmt.Errorf("ferry search: index %s: %w", root, err)
		}
		ws = &search.Workspace{Name: "dir", Root: root, Index: ix}
	}
	svc := search.NewService([]*search.Workspace{ws}, nil)
	defer func() { _ = svc.Close() }()
	resp, err := svc.SearchOnce(ctx, ws.Name, req)
	if err != nil {
		return usageErrorf("ferry search: %w", err)
	}
	w := bufio.NewWriter(env.Stdout)
	defer func() { _ = w.Flush() }()
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(resp); err != nil {
			return fmt.Errorf("ferry search: %w", err)
		}
		return nil
	}
	for _, c := range resp.Candidates {
		fmt.Fprintln(w, c.Path)
	}
	return nil
}

// readLines reads one path per line, without blank lines or a trailing CR.
func readLines(r io.Reader) ([]string, error) {
	if r == nil {
		return nil, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []string
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line != "" {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

// progressPrinter reports a long first listing on a terminal.
func progressPrinter(w io.Writer) func(index.Progress) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(p index.Progress) {
		if !p.Initial || p.Elapsed < 300*time.Millisecond {
			return
		}
		if p.Done {
			fmt.Fprintf(w, "\rindexed %d files in %v\n", p.Files, p.Elapsed.Round(time.Millisecond))
			return
		}
		fmt.Fprintf(w, "\rindexing: %d files, %d folders to go…", p.Files, p.DirsPending)
	}
}
