package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// TestStoreWrapsEveryMethod: countingStore declares every method of
// store.Store (Close aside) itself, so no failure passes uncounted through
// the embedded Store.
func TestStoreWrapsEveryMethod(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	iface, err := parser.ParseFile(fset, filepath.Join("..", "store", "store.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	ast.Inspect(iface, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Store" {
			return true
		}
		for _, m := range ts.Type.(*ast.InterfaceType).Methods.List {
			for _, name := range m.Names {
				if name.Name != "Close" {
					want = append(want, name.Name)
				}
			}
		}
		return false
	})
	wrap, err := parser.ParseFile(fset, "store.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range wrap.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
			if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "countingStore" && fd.Name.Name != "count" {
				got = append(got, fd.Name.Name)
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("countingStore wraps %v\nstore.Store has %v", got, want)
	}
}
