package index

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/ignore"
)

// sandbox is an empty git configuration (HOME and XDG_CONFIG_HOME) that
// both git and the index read, so the user's own settings play no part.
type sandbox struct {
	home, xdg string
}

func newSandbox(t testing.TB) sandbox {
	t.Helper()
	d := t.TempDir()
	s := sandbox{home: filepath.Join(d, "home"), xdg: filepath.Join(d, "xdg")}
	mkdirs(t, s.home, s.xdg)
	return s
}

func (s sandbox) env() *ignore.Env { return &ignore.Env{Home: s.home, XDGConfigHome: s.xdg} }

// git runs git in dir with the sandbox's configuration.
func (s sandbox) git(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	env := []string{"HOME=" + s.home, "XDG_CONFIG_HOME=" + s.xdg, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// gitFiles is what git lists as the work tree's files: tracked and
// untracked, without the ignored ones.
func (s sandbox) gitFiles(t testing.TB, dir string) []string {
	t.Helper()
	out := s.git(t, dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var files []string
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

func mkdirs(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// write creates the file rel under root (and its directories).
func write(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	mkdirs(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func paths(s *Snapshot) []string {
	out := make([]string, s.Len())
	for i := range out {
		out[i] = s.Path(i)
	}
	return out
}

// open opens an index on root and waits for its first listing with
// metadata; it is closed when the test ends.
func open(t testing.TB, root string, opts Options) *Index {
	t.Helper()
	ix, err := Open(context.Background(), root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ix.WaitMetadata(ctx); err != nil {
		t.Fatal(err)
	}
	return ix
}

// eventually polls the index's snapshot until cond holds, failing the
// test after 5 seconds with what cond last said.
func eventually(t *testing.T, ix *Index, what string, cond func(s *Snapshot) string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		why := cond(ix.Snapshot())
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s: %s", what, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// has is a condition: the snapshot holds (or, with want false, lacks) rel.
func has(rel string, want bool) func(s *Snapshot) string {
	return func(s *Snapshot) string {
		if _, ok := s.Find(rel); ok != want {
			if want {
				return rel + " is missing"
			}
			return rel + " is still there"
		}
		return ""
	}
}

// all combines conditions.
func all(conds ...func(s *Snapshot) string) func(s *Snapshot) string {
	return func(s *Snapshot) string {
		for _, c := range conds {
			if why := c(s); why != "" {
				return why
			}
		}
		return ""
	}
}
