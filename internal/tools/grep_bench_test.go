package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// srBenchTree writes a source-like tree: dirs×files files of about
// lines lines each, a .gitignore, and an ignored build directory.
func srBenchTree(b *testing.B, dirs, files, lines int) string {
	b.Helper()
	root := b.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"func", "return", "if", "err", "nil", "value", "context", "struct", "for", "range", "x", "y"}
	var line strings.Builder
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("pkg%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			var content strings.Builder
			for range lines {
				line.Reset()
				for range 4 + rng.IntN(8) {
					line.WriteString(words[rng.IntN(len(words))])
					line.WriteByte(' ')
				}
				content.WriteString(line.String())
				content.WriteByte('\n')
			}
			if rng.IntN(50) == 0 {
				content.WriteString("// TODO: needle here\n")
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(content.String()), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("/build/\n*.o\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "build"), 0o755); err != nil {
		b.Fatal(err)
	}
	return root
}

func srBenchRun(b *testing.B, tool Tool, env *Env, input string) {
	b.Helper()
	for b.Loop() {
		if _, err := tool.Run(context.Background(), env, json.RawMessage(input)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrepTree searches ~40 MB in 2,000 files.
func BenchmarkGrepTree(b *testing.B) {
	root := srBenchTree(b, 40, 50, 400)
	env, _ := srEnvAt(b, root)
	for _, c := range []struct{ name, input string }{
		{"files_with_matches", `{"pattern":"needle"}`},
		{"content", `{"pattern":"needle","output_mode":"content"}`},
		{"count_regex", `{"pattern":"err\\s+nil","output_mode":"count"}`},
		{"content_context", `{"pattern":"TODO","output_mode":"content","-C":2}`},
		{"multiline", `{"pattern":"needle here\\n","multiline":true}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(40 * 50 * 400 * 40)
			srBenchRun(b, Grep{}, env, c.input)
		})
	}
}

// BenchmarkGlobTree lists 20,000 files.
func BenchmarkGlobTree(b *testing.B) {
	root := srBenchTree(b, 200, 100, 0)
	env, _ := srEnvAt(b, root)
	srBenchRun(b, Glob{}, env, `{"pattern":"**/*.go"}`)
}
