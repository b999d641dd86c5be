package script

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// artifactWorkspace is a workspace with a file to keep, one to change, an
// ignore rule and an ignored file.
func artifactWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for name, body := range map[string]string{
		"keep.txt":     "keep\n",
		"change.txt":   "before\n",
		".gitignore":   "*.log\nbuild/\n",
		"old.log":      "old\n",
		"sub/same.txt": "same\n",
		"sub/swap.txt": "swap\n",
	} {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// runArtifacts runs body as the script of a session on ws with artifacts
// on or off; it returns the result, the recorder and the log.
func runArtifacts(t *testing.T, ws, body string, on bool) (adapter.Result, *recorder, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	a, err := New(Config{Command: []string{writeScript(t, body)}, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	s := adaptertest.Open(t, testCtx(t), a, adapter.SessionConfig{SessionID: "sess-1", Mode: protocol.ModeDefault,
		Workspace: protocol.Workspace{ID: "ws", Name: "ws", Path: ws}, Artifacts: on})
	rec := &recorder{}
	res, err := s.Run(testCtx(t), turn(t, txt("go")), rec.emit)
	if err != nil {
		t.Fatalf("Run: %v; events %+v", err, rec.Events())
	}
	return res, rec, logs
}

// artifactPaths are the paths of the result's files and of the
// agent.artifact events; the test fails when they disagree.
func artifactPaths(t *testing.T, res adapter.Result, rec *recorder) []string {
	t.Helper()
	var fromResult, fromEvents []string
	for _, f := range res.Artifacts {
		fromResult = append(fromResult, f.Path())
	}
	for _, e := range rec.Events() {
		if a, ok := e.Payload.(*protocol.Artifact); ok {
			if e.Type != protocol.TypeArtifact || a.TurnID != "turn-1" || a.ToolUseID != "" || a.ArtifactID == "" {
				t.Fatalf("bad artifact event %s %+v", e.Type, a)
			}
			fromEvents = append(fromEvents, a.Path)
		}
	}
	if !slices.Equal(fromResult, fromEvents) {
		t.Fatalf("Result.Artifacts %q, agent.artifact %q", fromResult, fromEvents)
	}
	return fromResult
}

func TestArtifactsCreatedAndChanged(t *testing.T) {
	t.Parallel()
	noLeak(t)
	ws := artifactWorkspace(t)
	// Created, appended to, rewritten at the same size, replaced with the
	// old mtime: four artifacts; keep.txt, ignored files, .git, a
	// symlink and a directory are not.
	res, rec, _ := runArtifacts(t, ws, `
echo hello
printf 'new\n' > zz-made.txt
printf 'after\n' >> change.txt
printf 'x\n' > debug.log
mkdir -p build && printf 'b\n' > build/out.bin
mkdir -p .git && printf 'ref\n' > .git/HEAD
ln -s keep.txt link.txt
mkdir -p newdir
sleep 0.02
printf 'SAME\n' > sub/same.txt
printf 'SWAP\n' > sub/tmp && touch -r sub/swap.txt sub/tmp && mv sub/tmp sub/swap.txt
`, true)
	if res.StopReason != protocol.StopEndTurn {
		t.Fatalf("stop %s", res.StopReason)
	}
	if got, want := artifactPaths(t, res, rec), []string{"change.txt", "sub/same.txt", "sub/swap.txt", "zz-made.txt"}; !slices.Equal(got, want) {
		t.Fatalf("artifacts %q, want %q", got, want)
	}
	if f := res.Artifacts[0]; f.Size() != int64(len("before\nafter\n")) || f.FileName() != "change.txt" || !strings.HasPrefix(f.MimeType(), "text/plain") {
		t.Fatalf("change.txt: %+v", f.ToMessage())
	}
	if got := rec.text(t); got != "hello\n" {
		t.Fatalf("text %q", got)
	}
	// The artifacts come before the turn's end.
	if types := rec.Types(); types[len(types)-1] != protocol.TypeArtifact {
		t.Fatalf("event types %q", types)
	}
}

func TestArtifactsNamed(t *testing.T) {
	t.Parallel()
	noLeak(t)
	ws := artifactWorkspace(t)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, rec, logs := runArtifacts(t, ws, `
printf 'x\n' > debug.log
printf 'y\n' > other.log
printf 'before\n::ferry-artifact debug.log\n'
printf '::ferry-artifact %s\n' "$1"`+"\n"+`printf '::ferry-artifact `+outside+`\r\n::ferry-artifact missing.txt\n'
printf '::ferry-artifact keep.txt\n:: not a marker\n  ::ferry-artifact keep.txt\n'
printf '::ferry-artifact '"$PWD"'/debug.log'
exit 3
`, true)
	if res.StopReason != protocol.StopError {
		t.Fatalf("stop %s", res.StopReason)
	}
	// Named: handed over even when ignored (debug.log, once though named
	// twice) or unchanged (keep.txt); other.log is ignored and not named.
	if got, want := artifactPaths(t, res, rec), []string{"debug.log", "keep.txt"}; !slices.Equal(got, want) {
		t.Fatalf("artifacts %q, want %q", got, want)
	}
	if got, want := rec.text(t), "before\n:: not a marker\n  ::ferry-artifact keep.txt\n"; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	for _, want := range []string{"name=" + outside, "name=missing.txt"} {
		if !strings.Contains(logs.String(), "file not handed over") || !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks the refusal of %s:\n%s", want, logs)
		}
	}
}

func TestArtifactsOff(t *testing.T) {
	t.Parallel()
	noLeak(t)
	ws := artifactWorkspace(t)
	res, rec, _ := runArtifacts(t, ws, `
printf 'new\n' > made.txt
printf 'after\n' >> change.txt
printf 'x\n' > debug.log
printf 'text\n::ferry-artifact debug.log\n'
`, false)
	if res.Artifacts != nil || len(artifactPaths(t, res, rec)) != 0 {
		t.Fatalf("artifacts with the switch off: %+v", res.Artifacts)
	}
	if got := rec.text(t); got != "text\n" {
		t.Fatalf("text %q", got)
	}
}

// TestArtifactsSnapshotBound is not parallel: it lowers the package's
// bound (parallel tests wait until it has finished).
func TestArtifactsSnapshotBound(t *testing.T) {
	old := maxSnapshotFiles
	maxSnapshotFiles = 2
	t.Cleanup(func() { maxSnapshotFiles = old })
	ws := artifactWorkspace(t)
	// The snapshots see .gitignore and change.txt, then .gitignore and
	// keep.txt: compared, keep.txt would look new.
	res, rec, logs := runArtifacts(t, ws, `
rm change.txt
printf 'new\n' > made.txt
printf '::ferry-artifact sub/same.txt\n'
`, true)
	if got, want := artifactPaths(t, res, rec), []string{"sub/same.txt"}; !slices.Equal(got, want) {
		t.Fatalf("artifacts %q, want %q", got, want)
	}
	if !strings.Contains(logs.String(), "stopped at its file bound") || !strings.Contains(logs.String(), "only named files") {
		t.Fatalf("the cut is not logged:\n%s", logs)
	}
}

func TestMarkerFilter(t *testing.T) {
	t.Parallel()
	in := "a\n::ferry-artifact x/y.txt\n::ferry\n::ferry-artifact \nb::ferry-artifact no\n::ferry-artifact last"
	want, wantNamed := "a\n::ferry\nb::ferry-artifact no\n", []string{"x/y.txt", "last"}
	for _, size := range []int{1, 2, 3, 7, len(in)} {
		var f markerFilter
		var text strings.Builder
		var named []string
		for i := 0; i < len(in); i += size {
			d, n := f.feed(in[i:min(i+size, len(in))])
			text.WriteString(d)
			named = append(named, n...)
		}
		d, n := f.end()
		text.WriteString(d)
		named = append(named, n...)
		if text.String() != want || !slices.Equal(named, wantNamed) {
			t.Errorf("chunks of %d: text %q, named %q", size, text.String(), named)
		}
	}
	// A line that only starts like a marker is shown, held no longer than
	// needed; a very long one is not held at all.
	var f markerFilter
	if d, _ := f.feed("::fer"); d != "" {
		t.Fatalf("a marker's start shown early: %q", d)
	}
	if d, _ := f.feed("n\n"); d != "::fern\n" {
		t.Fatalf("got %q", d)
	}
	long := ArtifactMarker + strings.Repeat("a", maxMarkerLine)
	if d, _ := f.feed(long); d != long {
		t.Fatalf("a long line held back")
	}
	if d, n := f.feed("\n"); d != "\n" || n != nil {
		t.Fatalf("after a long line: %q %q", d, n)
	}
}

// TestArtifactsRepoRules: a workspace below the top of its repository
// follows the repository's rules: the top's .gitignore, info/exclude and
// a .ignore file.
func TestArtifactsRepoRules(t *testing.T) {
	t.Parallel()
	noLeak(t)
	repo := t.TempDir()
	ws := filepath.Join(repo, "sub")
	for name, body := range map[string]string{
		".git/info/exclude": "*.tmp\n",
		".gitignore":        "gen/\n",
		"sub/.ignore":       "cache.db\n",
	} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, rec, _ := runArtifacts(t, ws, `
printf 'a\n' > a.tmp
mkdir -p gen && printf 'g\n' > gen/x.go
printf 'c\n' > cache.db
printf 'ok\n' > ok.txt
printf '::ferry-artifact gen/x.go\n'
`, true)
	if got, want := artifactPaths(t, res, rec), []string{"gen/x.go", "ok.txt"}; !slices.Equal(got, want) {
		t.Fatalf("artifacts %q, want %q", got, want)
	}
}

// TestArtifactsSnapshotTimeBound is not parallel: it lowers the package's
// time bound.
func TestArtifactsSnapshotTimeBound(t *testing.T) {
	old := snapshotTime
	snapshotTime = time.Nanosecond
	t.Cleanup(func() { snapshotTime = old })
	ws := artifactWorkspace(t)
	res, rec, logs := runArtifacts(t, ws, `
printf 'new\n' > made.txt
printf '::ferry-artifact keep.txt\n'
`, true)
	if got, want := artifactPaths(t, res, rec), []string{"keep.txt"}; !slices.Equal(got, want) {
		t.Fatalf("artifacts %q, want %q", got, want)
	}
	if !strings.Contains(logs.String(), "stopped at its time bound") {
		t.Fatalf("the cut is not logged:\n%s", logs)
	}
}
