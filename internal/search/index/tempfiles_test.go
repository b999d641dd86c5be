package index

import (
	"slices"
	"testing"
)

// TestWriteTempsNotIndexed: the temporary files of ferry's writes
// (".NAME.ferry-tmp-*") never reach the @ search index, whether they are
// there when it lists the tree or appear while it watches.
func TestWriteTempsNotIndexed(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	root := t.TempDir()
	write(t, root, "main.go", "")
	write(t, root, "sub/.main.go.ferry-tmp-0123456789abcdef", "")
	write(t, root, ".x.ferry-tmp-7-4026531836-0123456789abcdef", "")
	static := open(t, root, Options{Env: sb.env(), Mode: Static})
	if got := paths(static.Snapshot()); !slices.Equal(got, []string{"main.go"}) {
		t.Fatalf("listed %q, want only main.go", got)
	}
	ix := open(t, root, Options{Env: sb.env()})
	write(t, root, "sub/.late.go.ferry-tmp-0123456789abcdef", "")
	write(t, root, "sub/late.go", "")
	eventually(t, ix, "late.go indexed", has("sub/late.go", true))
	if got := paths(ix.Snapshot()); !slices.Equal(got, []string{"main.go", "sub/late.go"}) {
		t.Fatalf("watched %q, want main.go and sub/late.go", got)
	}
}
