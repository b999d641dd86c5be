package search

import (
	"context"
	"fmt"
	"mime"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/ferry-dev/ferry/internal/ignore"
	"github.com/ferry-dev/ferry/internal/search/fuzzy"
	"github.com/ferry-dev/ferry/internal/search/index"
	"github.com/ferry-dev/ferry/protocol"
)

// Workspace is one folder the client serves, with its live index.
type Workspace struct {
	// Name identifies the workspace to the master and the UI.
	Name string
	// Root is its canonical absolute path.
	Root string
	// Index gives the current snapshot of its files (an *index.Index, or
	// Static for a fixed list).
	Index Snapshotter
}

// Snapshotter is what a search reads a workspace's files from.
type Snapshotter interface {
	Snapshot() *index.Snapshot
}

// Static is a Snapshotter of a fixed snapshot (ferry search --stdin).
type Static struct{ Snap *index.Snapshot }

// Snapshot returns the fixed snapshot.
func (s Static) Snapshot() *index.Snapshot { return s.Snap }

// OpenIndex opens the index of a folder (a project root that is not itself a
// workspace). The service closes what it opened.
type OpenIndex func(ctx context.Context, root string) (*index.Index, error)

// Service answers file searches over a client's workspaces.
//
// Paths in answers are relative to a workspace, never absolute (§16.1.2),
// and resolve back to the same file when they return in file_references:
// a file of the session's workspace by its workspace-relative path; with
// scope project, a file of the enclosing repository by a path relative to
// the workspace ("../lib/x.go" when it lies outside it); with scope
// global, a file of any workspace by its path relative to that workspace,
// with workspace_id naming it (on every candidate of the answer).
// match_ranges index the path as returned.
type Service struct {
	workspaces []*Workspace
	open       OpenIndex

	mu       sync.Mutex
	projects map[string]*index.Index // repository root → index, opened on demand
}

// NewService returns a service over workspaces. open may be nil, in which
// case scope project searches the workspace itself.
func NewService(workspaces []*Workspace, open OpenIndex) *Service {
	return &Service{workspaces: workspaces, open: open, projects: map[string]*index.Index{}}
}

// Close closes the project indexes the service opened (not the workspaces').
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for root, ix := range s.projects {
		if err := ix.Close(); err != nil && first == nil {
			first = err
		}
		delete(s.projects, root)
	}
	return first
}

func (s *Service) workspace(name string) (*Workspace, error) {
	for _, w := range s.workspaces {
		if w.Name == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("search: no workspace %q", name)
}

// source is one index searched for a request, and how its paths are shown.
type source struct {
	snap *index.Snapshot
	// prefix is prepended to the index's relative paths in answers.
	prefix string
	// prefixUnits is prefix's length in UTF-16 code units.
	prefixUnits int
	// workspace is the workspace_id its candidates state ("" for none).
	workspace string
}

func (s *Service) sources(ctx context.Context, ws *Workspace, scope string) ([]source, error) {
	switch scope {
	case protocol.ScopeProject:
		repo, ok := ignore.FindRepo(ws.Root)
		if !ok || repo.WorkTree == ws.Root || s.open == nil {
			return []source{{snap: ws.Index.Snapshot()}}, nil
		}
		ix, err := s.projectIndex(ctx, repo.WorkTree)
		if err != nil {
			return nil, err
		}
		rel := strings.TrimPrefix(ws.Root, repo.WorkTree+"/")
		prefix := strings.Repeat("../", strings.Count(rel, "/")+1)
		return []source{{snap: ix.Snapshot(), prefix: prefix, prefixUnits: len(prefix)}}, nil
	case protocol.ScopeGlobal:
		out := []source{{snap: ws.Index.Snapshot(), workspace: ws.Name}}
		for _, other := range s.workspaces {
			if other != ws {
				out = append(out, source{snap: other.Index.Snapshot(), workspace: other.Name})
			}
		}
		return out, nil
	default:
		return []source{{snap: ws.Index.Snapshot()}}, nil
	}
}

func (s *Service) projectIndex(ctx context.Context, root string) (*index.Index, error) {
	s.mu.Lock()
	ix, ok := s.projects[root]
	s.mu.Unlock()
	if ok {
		return ix, ix.Wait(ctx)
	}
	ix, err := s.open(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("search: index the project %s: %w", root, err)
	}
	s.mu.Lock()
	if have, ok := s.projects[root]; ok {
		s.mu.Unlock()
		_ = ix.Close()
		ix = have
	} else {
		s.projects[root] = ix
		s.mu.Unlock()
	}
	return ix, ix.Wait(ctx)
}

// filter is a request's filters, compiled.
type filter struct {
	exts     map[string]bool
	excludes []string
}

func compileFilter(f *protocol.SearchFilters) (*filter, error) {
	if f == nil || len(f.Extensions) == 0 && len(f.ExcludePatterns) == 0 {
		return nil, nil
	}
	out := &filter{}
	for _, e := range f.Extensions {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if !strings.HasPrefix(e, ".") {
			e = "." + e
		}
		if out.exts == nil {
			out.exts = map[string]bool{}
		}
		out.exts[e] = true
	}
	for i, p := range f.ExcludePatterns {
		if !doublestar.ValidatePattern(p) {
			return nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: fmt.Sprintf("payload.filters.exclude_patterns[%d]", i), Message: "not a valid glob pattern"}
		}
		out.excludes = append(out.excludes, p)
	}
	return out, nil
}

func (f *filter) keep(rel string) bool {
	if f == nil {
		return true
	}
	if f.exts != nil && !f.exts[strings.ToLower(path.Ext(rel))] {
		return false
	}
	for _, p := range f.excludes {
		if ok, _ := doublestar.Match(p, rel); ok {
			return false
		}
	}
	return true
}

// narrowing remembers the last completed search of a picker, so that one
// more typed character scans only the previous matches, starting from the
// scores of the previous hits.
type narrowing struct {
	pattern *fuzzy.Pattern
	key     string
	gens    []uint64
	sets    []*fuzzy.Set
	hits    [][]int
}

type ranked struct {
	src  int
	idx  int
	raw  int32
	mt   int64
	path string
	// matched is set for fuzzy hits (score and ranges), not recent files.
	matched bool
	res     fuzzy.Result
}

// Search answers one request for a session of workspace wsName. prev, when
// not nil, is the picker's last completed search; the returned narrowing
// replaces it.
func (s *Service) search(ctx context.Context, wsName string, req *protocol.FileSearch, prev *narrowing) (*protocol.FileCandidates, *narrowing, error) {
	ws, err := s.workspace(wsName)
	if err != nil {
		return nil, nil, err
	}
	flt, err := compileFilter(req.Filters)
	if err != nil {
		return nil, nil, err
	}
	max := protocol.DefaultMaxResults
	if req.MaxResults != nil {
		max = min(*req.MaxResults, protocol.MaxResultsCap)
	}
	scope := req.Scope
	if scope == "" {
		scope = protocol.ScopeWorkspace
	}
	pat := fuzzy.Compile(req.Query)
	if pat.Empty() {
		// "Most recently modified" needs the times, which an index learns
		// after its paths: wait for them (briefly, at startup only).
		if err := waitMetadata(ctx, ws, scope, s.workspaces); err != nil {
			return nil, nil, err
		}
	}
	srcs, err := s.sources(ctx, ws, scope)
	if err != nil {
		return nil, nil, err
	}
	var hits []ranked
	total := 0
	if pat.Empty() {
		hits, total = recent(srcs, flt, max)
	} else {
		var next *narrowing
		hits, total, next, err = s.fuzzy(ctx, srcs, pat, flt, max, prev, scope+"\x00"+filterKey(req.Filters))
		if err != nil {
			return nil, nil, err
		}
		prev = next
	}
	out := &protocol.FileCandidates{QueryID: req.QueryID, Candidates: make([]protocol.Candidate, 0, len(hits)), Truncated: total > len(hits)}
	out.TotalCount = &total
	for _, h := range hits {
		out.Candidates = append(out.Candidates, candidate(srcs[h.src], h))
	}
	if pat.Empty() {
		return out, nil, nil
	}
	return out, prev, nil
}

// metadataWaiter is an index whose times and sizes may come after its paths.
type metadataWaiter interface {
	WaitMetadata(ctx context.Context) error
}

func waitMetadata(ctx context.Context, ws *Workspace, scope string, all []*Workspace) error {
	list := []*Workspace{ws}
	if scope == protocol.ScopeGlobal {
		list = all
	}
	for _, w := range list {
		if mw, ok := w.Index.(metadataWaiter); ok {
			if err := mw.WaitMetadata(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func filterKey(f *protocol.SearchFilters) string {
	if f == nil {
		return ""
	}
	return strings.Join(f.Extensions, "\x01") + "\x02" + strings.Join(f.ExcludePatterns, "\x01")
}

func (s *Service) fuzzy(ctx context.Context, srcs []source, pat *fuzzy.Pattern, flt *filter, max int, prev *narrowing, key string) ([]ranked, int, *narrowing, error) {
	next := &narrowing{pattern: pat, key: key, gens: make([]uint64, len(srcs)), sets: make([]*fuzzy.Set, len(srcs)),
		hits: make([][]int, len(srcs))}
	usePrev := prev != nil && prev.key == key && len(prev.sets) == len(srcs) && pat.Refines(prev.pattern)
	var all []ranked
	total := 0
	for i, src := range srcs {
		opt := fuzzy.Options{K: max, Collect: true}
		if flt != nil {
			snap := src.snap
			opt.Accept = func(j int) bool { return flt.keep(snap.Path(j)) }
		}
		next.gens[i] = src.snap.Generation()
		if usePrev && prev.gens[i] == next.gens[i] {
			opt.Within, opt.Seeds = prev.sets[i], prev.hits[i]
		}
		res, err := fuzzy.TopK(ctx, pat, src.snap, opt)
		if err != nil {
			return nil, 0, nil, err
		}
		next.sets[i] = res.Matches
		total += res.Total
		for _, h := range res.Hits {
			next.hits[i] = append(next.hits[i], h.Index)
			all = append(all, ranked{src: i, idx: h.Index, raw: h.Raw, path: src.snap.Path(h.Index), matched: true, res: h.Result})
		}
	}
	// Merge the sources by the matcher's own order: higher score, then the
	// shorter path, then the lexically smaller one.
	sort.SliceStable(all, func(a, b int) bool {
		x, y := all[a], all[b]
		if x.raw != y.raw {
			return x.raw > y.raw
		}
		if len(x.path) != len(y.path) {
			return len(x.path) < len(y.path)
		}
		if x.path != y.path {
			return x.path < y.path
		}
		return x.src < y.src // the same path in two workspaces: the session's first
	})
	return all[:min(len(all), max)], total, next, nil
}

// recent answers the empty query: the most recently modified files first.
func recent(srcs []source, flt *filter, max int) ([]ranked, int) {
	var all []ranked
	total := 0
	for i, src := range srcs {
		snap := src.snap
		var keep func(int) bool
		if flt != nil {
			keep = func(j int) bool { return flt.keep(snap.Path(j)) }
			for j := range snap.Len() {
				if keep(j) {
					total++
				}
			}
		} else {
			total += snap.Len()
		}
		for _, j := range snap.RecentTopFunc(max, keep) {
			all = append(all, ranked{src: i, idx: j, mt: snap.ModTimeUnixNano(j), path: snap.Path(j)})
		}
	}
	sort.SliceStable(all, func(a, b int) bool {
		if all[a].mt != all[b].mt {
			return all[a].mt > all[b].mt
		}
		if all[a].path != all[b].path {
			return all[a].path < all[b].path
		}
		return all[a].src < all[b].src
	})
	return all[:min(len(all), max)], total
}

// PreloadMIME reads the system's MIME tables in the background. The first
// candidate with an extension needs them, and on Linux reading them
// (/etc/mime.types, shared-mime-info's globs2) takes ~5 ms: a one-shot
// search (ferry search) calls this first, so that the reading overlaps
// its own reading of the paths instead of following it.
func PreloadMIME() {
	go mime.TypeByExtension(".txt")
}

func candidate(src source, h ranked) protocol.Candidate {
	rel := h.path
	full := src.prefix + rel
	dir, name := path.Split(full)
	c := protocol.Candidate{
		Path:        full,
		WorkspaceID: src.workspace,
		Name:        name,
		Directory:   strings.TrimSuffix(dir, "/"),
		Extension:   path.Ext(name),
	}
	if c.Extension != "" {
		if mt := mime.TypeByExtension(c.Extension); mt != "" {
			c.MimeType, _, _ = strings.Cut(mt, ";")
		}
	}
	if mt := src.snap.ModTimeUnixNano(h.idx); mt != 0 {
		c.ModifiedAt = time.Unix(0, mt).UTC().Format(time.RFC3339Nano)
		size := src.snap.Size(h.idx)
		c.SizeBytes = &size
	}
	if h.matched {
		score := h.res.Score
		c.MatchScore = &score
		for _, r := range h.res.Ranges {
			c.MatchRanges = append(c.MatchRanges, protocol.MatchRange{Start: r.Start + src.prefixUnits, End: r.End + src.prefixUnits})
		}
	}
	return c
}
