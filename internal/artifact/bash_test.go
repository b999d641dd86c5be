package artifact_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/tools"
)

func bashCall(t *testing.T, fx *fixture, in map[string]any) ([]artifact.File, string, error) {
	t.Helper()
	res, got, err := call(t, fx.env, artifact.WrapBash(tools.Bash{}, fx.cfg), "toolu_b", in)
	text := ""
	if res != nil && len(res.Blocks) > 0 {
		text = res.Blocks[0].Text
	}
	return got, text, err
}

func paths(fs []artifact.File) string {
	var ps []string
	for _, f := range fs {
		ps = append(ps, f.Path())
	}
	sort.Strings(ps)
	return strings.Join(ps, ",")
}

func TestBashRegistersDeclaredFilesItMade(t *testing.T) {
	fx := newFixture(t)
	fx.file(t, "keep.txt", "untouched\n")
	fx.file(t, "redo.csv", "old\n")
	fx.file(t, "adir/x", "")
	outside := filepath.Join(t.TempDir(), "outside.txt")
	cmd := "mkdir -p out && printf 'a,b\\n1,2\\n' > out/new.csv && printf 'x,y\\n' > redo.csv && echo scratch > tmp.txt && " +
		"ln -s " + outside + " out/link.txt && echo x > " + outside
	got, text, err := bashCall(t, fx, map[string]any{
		"command": cmd,
		"artifact_paths": []any{
			"out/new.csv",                  // created: registered
			"redo.csv",                     // overwritten: registered
			"keep.txt",                     // not touched: skipped
			"adir",                         // a directory: skipped
			"../escape.txt", "/etc/passwd", // outside: skipped
			"out/link.txt", // a link out of the workspace: skipped
			"never.txt",    // declared, not made: skipped
			"out/new.csv",  // twice: once
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Exit code: 0") {
		t.Fatalf("command output %q", text)
	}
	if paths(got) != "out/new.csv,redo.csv" {
		t.Fatalf("registered %s", paths(got))
	}
	for _, f := range got {
		if f.ToolUseID() != "toolu_b" || !strings.HasPrefix(f.MimeType(), "text/csv") {
			t.Fatalf("%+v", f.ToMessage().Fields())
		}
	}
	if got[0].Path() == "out/new.csv" && got[0].Size() != 8 {
		t.Fatalf("size %d", got[0].Size())
	}
	log := fx.log.String()
	for _, want := range []string{"did not create or change", "directory", "outside the workspace", "not there after the command"} {
		if !strings.Contains(log, want) {
			t.Errorf("no warning %q in %s", want, log)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(fx.dir, "tmp.txt")); string(b) != "scratch\n" {
		t.Fatal("the command did not run")
	}
}

func TestBashWithoutDeclarationsRegistersNothing(t *testing.T) {
	fx := newFixture(t)
	got, _, err := bashCall(t, fx, map[string]any{"command": "echo hi > made.txt"})
	if err != nil || len(got) != 0 {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestBashBadDeclarationsNeverFailTheCommand(t *testing.T) {
	for _, decl := range []any{"out.txt", 7, map[string]any{"a": 1}, nil, []any{3, "", "ok.txt"}} {
		fx := newFixture(t)
		got, text, err := bashCall(t, fx, map[string]any{"command": "echo hi > ok.txt", "artifact_paths": decl})
		if err != nil || !strings.Contains(text, "Exit code: 0") {
			t.Fatalf("%v: %v %q", decl, err, text)
		}
		want := ""
		if list, ok := decl.([]any); ok && len(list) == 3 {
			want = "ok.txt"
		}
		if paths(got) != want || !strings.Contains(fx.log.String(), "artifact") {
			t.Fatalf("%v: registered %q, log %s", decl, paths(got), fx.log)
		}
	}
}

func TestBashFailureRegistersNothing(t *testing.T) {
	fx := newFixture(t)
	// A timeout is a failed call: the file it made is not registered.
	_, _, err := bashCall(t, fx, map[string]any{"command": "echo x > t.txt; sleep 5", "timeout_ms": 200, "artifact_paths": []any{"t.txt"}})
	if tools.CodeOf(err) != tools.CodeTimeout {
		t.Fatalf("err %v", err)
	}
	// So is an invalid input; the decorator's key does not mask the error.
	got, _, err := bashCall(t, fx, map[string]any{"command": "", "artifact_paths": []any{"t.txt"}})
	if tools.CodeOf(err) != tools.CodeInvalidInput || len(got) != 0 {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestBashNonZeroExitStillRegisters(t *testing.T) {
	// A non-zero exit is a normal Bash result (the agent reads the code);
	// a file the command declared and made is there for the user.
	fx := newFixture(t)
	got, text, err := bashCall(t, fx, map[string]any{"command": "echo partial > part.txt; exit 3", "artifact_paths": []any{"part.txt"}})
	if err != nil || !strings.Contains(text, "Exit code: 3") || paths(got) != "part.txt" {
		t.Fatalf("%v %q %s", err, text, paths(got))
	}
}

func TestBashTooManyPaths(t *testing.T) {
	fx := newFixture(t)
	var decl []any
	for range artifact.MaxDeclaredPaths + 5 {
		decl = append(decl, "f.txt")
	}
	got, _, err := bashCall(t, fx, map[string]any{"command": "echo x > f.txt", "artifact_paths": decl})
	if err != nil || paths(got) != "f.txt" || !strings.Contains(fx.log.String(), "too many") {
		t.Fatalf("%v %s %s", err, paths(got), fx.log)
	}
}

// TestBashRefusesHardLinkedArtifact: a command that hard-links a file from
// outside the workspace (ln /etc/shadow out.txt) and declares it gets it
// skipped with a warning that says why; so does a file linked inside.
func TestBashRefusesHardLinkedArtifact(t *testing.T) {
	fx := newFixture(t)
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte("root:$6$secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, text, err := bashCall(t, fx, map[string]any{
		"command":        "ln " + outside + " out.txt && echo mine > a.txt && ln a.txt b.txt && echo ok > ok.txt",
		"artifact_paths": []any{"out.txt", "b.txt", "ok.txt"},
	})
	if err != nil || !strings.Contains(text, "Exit code: 0") {
		t.Fatalf("%v %q", err, text)
	}
	if paths(got) != "ok.txt" {
		t.Fatalf("registered %s, want only ok.txt", paths(got))
	}
	if log := fx.log.String(); strings.Count(log, "hard link") < 2 {
		t.Errorf("no warning naming the hard links in %s", log)
	}
}
