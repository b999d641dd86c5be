package tools_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/tools"
)

// TestErrorCodesDocumented keeps docs/tools.md's table in step with the
// Code constants of errors.go: every constant has a row, every row a
// constant.
func TestErrorCodesDocumented(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
			codes[lit.Value] = vs.Names[0].Name
		}
		return true
	})
	if len(codes) < 17 {
		t.Fatalf("found only %d codes in errors.go", len(codes))
	}
	doc, err := os.ReadFile("../../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 2 {
			if _, err := strconv.Atoi(strings.TrimSpace(cells[1])); err == nil {
				rows[strings.TrimSpace(cells[1])] = true
			}
		}
	}
	for num, name := range codes {
		if !rows[num] {
			t.Errorf("%s (%s) has no row in docs/tools.md", name, num)
		}
	}
	for num := range rows {
		if _, ok := codes[num]; !ok {
			t.Errorf("docs/tools.md documents code %s, which errors.go does not define", num)
		}
	}
	if tools.CodeNotRead != 2 || tools.CodeStale != 3 || tools.CodeAmbiguous != 9 {
		t.Fatal("codes 2, 3 and 9 are the specification's and may not move")
	}
}

// TestToolsetDescribed: every tool has a description and an object schema.
func TestToolsetDescribed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, tool := range tools.FileTools() {
		if seen[tool.Name()] {
			t.Fatalf("tool %s listed twice", tool.Name())
		}
		seen[tool.Name()] = true
		if len(tool.Description()) < 100 {
			t.Errorf("%s: description too thin for a model", tool.Name())
		}
		if !strings.Contains(string(tool.InputSchema()), `"object"`) {
			t.Errorf("%s: input schema is not an object schema", tool.Name())
		}
	}
	if strings.Join(tools.FileToolNames(), ",") != "Read,Write,Edit,MultiEdit,NotebookEdit,Glob,Grep" {
		t.Fatalf("FileToolNames = %v", tools.FileToolNames())
	}
}
