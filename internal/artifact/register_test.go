package artifact_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/vfs"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	ws, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "out"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "out", "report.md"), []byte("# Report\n\nok\n"), 0o600))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "link")))
	must(os.WriteFile(filepath.Join(ws, "twice"), []byte("x"), 0o600))
	must(os.Link(filepath.Join(ws, "twice"), filepath.Join(ws, "twice2")))
	fsys, err := vfs.NewLocal(ws)
	must(err)

	f, err := artifact.Register(fsys, "out/report.md", "toolu_1")
	if err != nil {
		t.Fatal(err)
	}
	if f.Path() != "out/report.md" || f.FileName() != "report.md" || f.Size() != 13 || f.MimeType() != "text/markdown; charset=utf-8" || f.ToolUseID() != "toolu_1" {
		t.Fatalf("registered %+v", f.ToMessage())
	}
	if f, err := artifact.Register(fsys, filepath.Join(ws, "out", "report.md"), ""); err != nil || f.Path() != "out/report.md" {
		t.Fatalf("absolute path inside: %+v, %v", f, err)
	}
	for _, name := range []string{"link", filepath.Join(outside, "secret"), "../x", "out", "twice", "missing"} {
		if _, err := artifact.Register(fsys, name, ""); !errors.Is(err, artifact.ErrNotHandedOver) {
			t.Errorf("Register(%q) = %v, want ErrNotHandedOver", name, err)
		}
	}
}
