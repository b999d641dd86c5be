package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteRefusesHardLinkedFile: a workspace file that is a hard link to a
// file outside the workspace (ln /etc/x ws/f) must not be written through:
// Write and Edit refuse it with CodeHardLinked before asking anything, and
// neither name's content changes. A link between two workspace files is
// refused the same way: ferry cannot tell where the other names are.
func TestWriteRefusesHardLinkedFile(t *testing.T) {
	t.Parallel()
	env, ws := wtEnv(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	in := wtFile(t, ws, "a.txt", []byte("inside\n"))
	if err := os.Link(in, filepath.Join(ws, "b.txt")); err != nil {
		t.Fatal(err)
	}
	asked := 0
	env.Approve = func(ctx context.Context, a Approval) error { asked++; return nil }
	for _, name := range []string{"link.txt", "a.txt", "b.txt"} {
		wtMarkRead(t, env, name)
		msg := wtCode(t, Write{}, env, map[string]any{"file_path": name, "content": "pwned\n"}, CodeHardLinked)
		if !strings.Contains(msg, "hard link") {
			t.Errorf("Write %s: message %q does not say why", name, msg)
		}
		wtCode(t, Edit{}, env, map[string]any{"file_path": name, "old_string": "side", "new_string": "pwned"}, CodeHardLinked)
	}
	if asked != 0 {
		t.Errorf("the user was asked %d times about a write that is refused anyway", asked)
	}
	for p, want := range map[string]string{outside: "outside\n", filepath.Join(ws, "link.txt"): "outside\n", in: "inside\n", filepath.Join(ws, "b.txt"): "inside\n"} {
		if got := wtContent(t, p); got != want {
			t.Errorf("%s holds %q after refused writes, want %q", p, got, want)
		}
	}
	ents, _ := os.ReadDir(ws)
	if len(ents) != 3 {
		t.Errorf("the workspace holds %d entries, want link.txt, a.txt, b.txt (no temporary file)", len(ents))
	}
}
