package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/search/index"
	"github.com/ferry-dev/ferry/protocol"
)

// searchCmd is a parsed ferry search command line.
type searchCmd struct {
	req    *protocol.FileSearch
	dir    string
	stdin  bool
	asJSON bool
}

func runSearch(ctx context.Context, env Env, args []string) error {
	cmd, err := parseSearch(env, args)
	if cmd == nil {
		return err
	}
	search.PreloadMIME()
	var ws *search.Workspace
	if cmd.stdin {
		defer oneShotGC()()
		snap, err := stdinSnapshot(env.Stdin)
		if err != nil {
			return fmt.Errorf("ferry search: read standard input: %w", err)
		}
		ws = &search.Workspace{Name: "stdin", Index: search.Static{Snap: snap}}
	} else {
		root, err := filepath.Abs(cmd.dir)
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
	return printSearch(ctx, env.Stdout, ws, cmd.req, cmd.asJSON)
}

// parseSearch reads ferry search's command line; nil with a nil error is
// a command line already answered (--help).
func parseSearch(env Env, args []string) (*searchCmd, error) {
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
		return nil, err
	}
	if *limit < 1 || *limit > protocol.MaxResultsCap {
		return nil, usageErrorf("ferry search: --limit must be between 1 and %d", protocol.MaxResultsCap)
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
	return &searchCmd{req: req, dir: *dir, stdin: *stdin, asJSON: *asJSON}, nil
}

// printSearch answers req over ws once and prints the answer: the paths,
// one per line, or with asJSON the session.file.candidates payload.
func printSearch(ctx context.Context, out io.Writer, ws *search.Workspace, req *protocol.FileSearch, asJSON bool) error {
	svc := search.NewService([]*search.Workspace{ws}, nil)
	defer func() { _ = svc.Close() }()
	resp, err := svc.SearchOnce(ctx, ws.Name, req)
	if err != nil {
		return usageErrorf("ferry search: %w", err)
	}
	w := bufio.NewWriter(out)
	defer func() { _ = w.Flush() }()
	if asJSON {
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

// maxStdinLine bounds a line of --stdin: the longest a bufio.Scanner with
// a 1 MiB buffer takes, which --stdin has always used.
const maxStdinLine = 1 << 20

// stdinSnapshot reads the paths of standard input, one per line, without
// blank lines or up to two trailing CRs. The input is read whole into one
// buffer and the snapshot is built inside it (index.FromLines): a string
// per line would cost more than the text itself in time and memory.
func stdinSnapshot(r io.Reader) (*index.Snapshot, error) {
	text, err := readAll(r)
	if err != nil {
		return nil, err
	}
	snap, err := index.FromLines(text, maxStdinLine)
	if errors.Is(err, index.ErrLineTooLong) {
		return nil, bufio.ErrTooLong // the error --stdin has always given
	}
	return snap, err
}

// oneShotGC turns the collector off for a search of standard input, with
// a memory limit as the backstop, and returns what restores both. All the
// search allocates is its input and a few bytes per line, live until it
// answers: a collection there finds little to free, costs a pass over the
// whole heap (the start-up's included) and raised the peak by ~3 MB. The
// limit, 256 MiB above what the process holds now, lets the collector in
// when something does leave garbage behind (fuzzy.MaskOf allocates for
// each non-ASCII path). Overlapping searches (tests run in one process)
// share one setting: the first sets it, the last restores it.
func oneShotGC() (restore func()) {
	oneShot.mu.Lock()
	defer oneShot.mu.Unlock()
	if oneShot.n == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		oneShot.limit = debug.SetMemoryLimit(int64(min(ms.Sys, math.MaxInt64/2)) + 256<<20) //nolint:gosec // bounded above
		oneShot.percent = debug.SetGCPercent(-1)
	}
	oneShot.n++
	return func() {
		oneShot.mu.Lock()
		defer oneShot.mu.Unlock()
		if oneShot.n--; oneShot.n == 0 {
			debug.SetGCPercent(oneShot.percent)
			debug.SetMemoryLimit(oneShot.limit)
		}
	}
}

// oneShot is the collector's setting oneShotGC restores.
var oneShot struct {
	mu      sync.Mutex
	n       int // searches under way
	percent int
	limit   int64
}

// readAll is io.ReadAll with the buffer sized from the input when it is a
// regular file (ferry search --stdin < list), so that reading never copies
// what it has read. Otherwise (a pipe) it reads into blocks of growing
// size, up to 8 MiB, and joins them once at the end: at most twice the
// text is held at a time, where growing one buffer holds up to three times
// it and copies it over and over.
func readAll(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	size := 64 << 10
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil && fi.Size() >= off && fi.Size()-off < math.MaxInt32 {
				size = int(fi.Size()-off) + 1 // + 1: EOF is seen without growing
			}
		}
	}
	var full [][]byte
	total := 0
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			full = append(full, buf)
			total += len(buf)
			buf = make([]byte, 0, min(2*cap(buf), 8<<20))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(full) == 0 {
		return buf, nil
	}
	out := make([]byte, 0, total+len(buf))
	for _, b := range full {
		out = append(out, b...)
	}
	return append(out, buf...), nil
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
