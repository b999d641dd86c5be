package search_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/ferry-dev/ferry/internal/ignore"
	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/search/index"
	"github.com/ferry-dev/ferry/protocol"
)

func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openIndex(t *testing.T, root string) *index.Index {
	t.Helper()
	env := ignore.Env{Home: t.TempDir()}
	ix, err := index.Open(context.Background(), root, index.Options{Mode: index.Static, Env: &env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	if err := ix.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}

func canon(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func req(query string, scope string) *protocol.FileSearch {
	n := 20
	return &protocol.FileSearch{QueryID: protocol.NewID(), Query: query, Scope: scope, MaxResults: &n}
}

func paths(c *protocol.FileCandidates) []string {
	var out []string
	for _, x := range c.Candidates {
		out = append(out, x.Path)
	}
	return out
}

// checkRanges: every candidate's ranges lie inside its path, in UTF-16 units.
func checkRanges(t *testing.T, c *protocol.FileCandidates) {
	t.Helper()
	for _, x := range c.Candidates {
		n := len(utf16.Encode([]rune(x.Path)))
		for _, r := range x.MatchRanges {
			if r.Start < 0 || r.End > n || r.Start >= r.End {
				t.Fatalf("%s: range %+v outside its %d units", x.Path, r, n)
			}
		}
	}
}

func TestScopesResolveBack(t *testing.T) {
	t.Parallel()
	repo := canon(t, t.TempDir())
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	tree(t, repo, map[string]string{
		"app/web/router.ts":    "x",
		"app/web/view.ts":      "x",
		"lib/router_helper.go": "x",
		".gitignore":           "dist/\n",
		"app/dist/router.js":   "ignored",
	})
	other := canon(t, t.TempDir())
	tree(t, other, map[string]string{"tools/router.py": "x", "web/router.ts": "x"})
	wsRoot := filepath.Join(repo, "app")
	ws := &search.Workspace{Name: "app", Root: wsRoot, Index: openIndex(t, wsRoot)}
	ow := &search.Workspace{Name: "other", Root: other, Index: openIndex(t, other)}
	svc := search.NewService([]*search.Workspace{ws, ow}, func(ctx context.Context, root string) (*index.Index, error) {
		env := ignore.Env{Home: t.TempDir()}
		return index.Open(ctx, root, index.Options{Mode: index.Static, Env: &env})
	})
	defer svc.Close()
	ctx := context.Background()

	got, err := svc.SearchOnce(ctx, "app", req("router", protocol.ScopeWorkspace))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(paths(got), ",") != "web/router.ts" {
		t.Fatalf("workspace scope: %v (the ignored dist/ must not appear)", paths(got))
	}
	checkRanges(t, got)

	got, err = svc.SearchOnce(ctx, "app", req("router", protocol.ScopeProject))
	if err != nil {
		t.Fatal(err)
	}
	checkRanges(t, got)
	for _, p := range paths(got) {
		if _, err := os.Stat(filepath.Join(wsRoot, p)); err != nil {
			t.Errorf("project path %q does not resolve from the workspace: %v", p, err)
		}
	}
	if !contains(paths(got), "../lib/router_helper.go") || !contains(paths(got), "../app/web/router.ts") {
		t.Fatalf("project scope: %v", paths(got))
	}

	got, err = svc.SearchOnce(ctx, "app", req("router", protocol.ScopeGlobal))
	if err != nil {
		t.Fatal(err)
	}
	checkRanges(t, got)
	// §16.1.2: a path is relative to its workspace, never absolute; with
	// scope global each candidate says which workspace (workspace_id), and
	// the same relative path in two workspaces is two candidates.
	roots := map[string]string{"app": wsRoot, "other": other}
	var named []string
	for _, c := range got.Candidates {
		root, ok := roots[c.WorkspaceID]
		if !ok || filepath.IsAbs(c.Path) {
			t.Fatalf("global candidate %+v: want a relative path and workspace_id app or other", c)
		}
		if _, err := os.Stat(filepath.Join(root, c.Path)); err != nil {
			t.Errorf("global path %q does not resolve from workspace %s: %v", c.Path, c.WorkspaceID, err)
		}
		named = append(named, c.WorkspaceID+":"+c.Path)
	}
	for _, want := range []string{"app:web/router.ts", "other:web/router.ts", "other:tools/router.py"} {
		if !contains(named, want) {
			t.Fatalf("global scope: %v, want %s", named, want)
		}
	}
	for _, c := range got.Candidates {
		// The highlighted characters spell the query, prefix or not.
		u := utf16.Encode([]rune(c.Path))
		var hl []rune
		for _, r := range c.MatchRanges {
			hl = append(hl, utf16.Decode(u[r.Start:r.End])...)
		}
		if strings.ToLower(string(hl)) != "router" {
			t.Errorf("%s highlights %q", c.Path, string(hl))
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestFiltersAndEmptyQuery(t *testing.T) {
	t.Parallel()
	root := canon(t, t.TempDir())
	tree(t, root, map[string]string{
		"a.ts": "x", "b.tsx": "x", "c.go": "x", "node_modules/x.ts": "x", "src/d.TS": "x",
	})
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"c.go", "a.ts", "src/d.TS", "b.tsx"} {
		tm := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(root, name), tm, tm); err != nil {
			t.Fatal(err)
		}
	}
	ws := &search.Workspace{Name: "w", Root: root, Index: openIndex(t, root)}
	svc := search.NewService([]*search.Workspace{ws}, nil)
	ctx := context.Background()

	r := req("", protocol.ScopeWorkspace)
	got, err := svc.SearchOnce(ctx, "w", r)
	if err != nil {
		t.Fatal(err)
	}
	if p := paths(got); len(p) < 4 || p[0] != "node_modules/x.ts" && p[0] != "b.tsx" {
		t.Fatalf("empty query must list newest first: %v", p)
	}
	r.Filters = &protocol.SearchFilters{Extensions: []string{"ts", ".TSX"}, ExcludePatterns: []string{"node_modules/**"}}
	got, err = svc.SearchOnce(ctx, "w", r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(paths(got), ",") != "b.tsx,src/d.TS,a.ts" || *got.TotalCount != 3 || got.Truncated {
		t.Fatalf("filtered recent: %v total %d", paths(got), *got.TotalCount)
	}
	n := 1
	r.MaxResults = &n
	got, _ = svc.SearchOnce(ctx, "w", r)
	if len(got.Candidates) != 1 || !got.Truncated || *got.TotalCount != 3 {
		t.Fatalf("max_results 1: %v truncated %v total %d", paths(got), got.Truncated, *got.TotalCount)
	}
	r.Filters.ExcludePatterns = []string{"[unclosed"}
	_, err = svc.SearchOnce(ctx, "w", r)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Field != "payload.filters.exclude_patterns[0]" {
		t.Fatalf("bad exclude pattern: %v", err)
	}
}

// Typing one more character narrows the previous result set; the answers
// equal those of a fresh search.
func TestPickerNarrowingEqualsFreshSearch(t *testing.T) {
	t.Parallel()
	root := canon(t, t.TempDir())
	files := map[string]string{}
	for _, d := range []string{"net", "mm", "kernel", "drivers/net", "drivers/gpu"} {
		for _, f := range []string{"core.c", "page_alloc.c", "sched.c", "router.c", "Makefile", "Kconfig"} {
			files[d+"/"+f] = "x"
		}
	}
	tree(t, root, files)
	ws := &search.Workspace{Name: "w", Root: root, Index: openIndex(t, root)}
	svc := search.NewService([]*search.Workspace{ws}, nil)
	var mu sync.Mutex
	answers := map[string]*protocol.FileCandidates{}
	p := search.NewPicker(svc, "w", func(r *protocol.FileSearch, resp *protocol.FileCandidates, err error) {
		if err != nil {
			t.Errorf("%s: %v", r.Query, err)
			return
		}
		mu.Lock()
		answers[r.Query] = resp
		mu.Unlock()
	})
	defer p.Close()
	for _, q := range []string{"d", "dr", "dri", "driv", "drivn", "drivne", "drivnet", "drivnet c"} {
		p.Search(context.Background(), req(q, protocol.ScopeWorkspace))
		p.Idle()
		fresh, err := svc.SearchOnce(context.Background(), "w", req(q, protocol.ScopeWorkspace))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := answers[q]
		mu.Unlock()
		if got == nil || strings.Join(paths(got), ",") != strings.Join(paths(fresh), ",") || *got.TotalCount != *fresh.TotalCount {
			t.Fatalf("%q narrowed %v, fresh %v", q, got, paths(fresh))
		}
	}
}

func TestPickerCancelAndSupersede(t *testing.T) {
	t.Parallel()
	root := canon(t, t.TempDir())
	tree(t, root, map[string]string{"a/alpha.go": "x", "b/beta.go": "x"})
	ws := &search.Workspace{Name: "w", Root: root, Index: openIndex(t, root)}
	svc := search.NewService([]*search.Workspace{ws}, nil)
	var mu sync.Mutex
	var got []string
	p := search.NewPicker(svc, "w", func(r *protocol.FileSearch, resp *protocol.FileCandidates, err error) {
		mu.Lock()
		got = append(got, r.Query)
		mu.Unlock()
	})
	defer p.Close()
	for _, q := range []string{"a", "al", "alp", "alph"} {
		p.Search(context.Background(), req(q, protocol.ScopeWorkspace))
	}
	p.Idle()
	last := req("beta", protocol.ScopeWorkspace)
	p.Search(context.Background(), last)
	p.Cancel(last.QueryID)
	p.Idle()
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] && len(got[i]) < len(got[i-1]) {
			t.Fatalf("answers out of order: %v", got)
		}
	}
	if len(got) == 0 || got[len(got)-1] != "alph" {
		t.Fatalf("the newest answered query must be alph and the cancelled beta never answered: %v", got)
	}
}
