// Command gen writes the UI's icon PNGs (package icon) into web/static
// (run by `go generate ./web`; the argument names another directory).
package main

import (
	"fmt"
	"image/png"
	"os"
	"path"

	"github.com/ferry-dev/ferry/web/internal/icon"
)

func main() {
	dir := "static"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// run writes every icon below dir, and nowhere else (os.Root).
func run(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	for _, f := range icon.Files {
		if err := root.MkdirAll(path.Dir(f.Name), 0o750); err != nil {
			return err
		}
		out, err := root.Create(f.Name)
		if err != nil {
			return err
		}
		enc := png.Encoder{CompressionLevel: png.BestCompression}
		if err := enc.Encode(out, icon.Draw(f.Size, f.Kind)); err != nil {
			_ = out.Close()
			return fmt.Errorf("encode %s: %w", f.Name, err)
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
	return nil
}
