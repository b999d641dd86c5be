package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// The read-before-write contract end to end, with the real Read tool
// feeding the real Write and Edit.

func contractEnv(t *testing.T) (*tools.Env, string) {
	t.Helper()
	dir := t.TempDir()
	fsys, err := vfs.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fsys.Close() })
	return &tools.Env{FS: fsys, State: tools.NewReadState(), Limits: tools.DefaultLimits()}, fsys.Roots()[0]
}

func run(t *testing.T, env *tools.Env, tool tools.Tool, in map[string]any) (*tools.Result, error) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return tools.Invoke(context.Background(), env, tool, "toolu_test", b)
}

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	if !errors.Is(err, &tools.Error{Code: code}) {
		t.Fatalf("got %v, want code %d", err, code)
	}
}

func TestContractWithRealRead(t *testing.T) {
	t.Parallel()
	env, dir := contractEnv(t)
	p := filepath.Join(dir, "app.py")
	if err := os.WriteFile(p, []byte("line 1\nline 2\nline 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := map[string]any{"file_path": "app.py", "old_string": "line 2", "new_string": "line two"}

	_, err := run(t, env, tools.Edit{}, edit)
	wantCode(t, err, tools.CodeNotRead)

	// A partial read permits Edit (it matches old_string against the file
	// itself) but not Write, which needs every line seen.
	if _, err := run(t, env, tools.Read{}, map[string]any{"file_path": "app.py", "offset": 2, "limit": 1}); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, env, tools.Write{}, map[string]any{"file_path": "app.py", "content": "x\n"})
	wantCode(t, err, tools.CodeNotRead)
	if _, err := run(t, env, tools.Edit{}, edit); err != nil {
		t.Fatalf("Edit after a partial Read: %v", err)
	}
	// The Edit did not show the agent lines 1 and 3: Write still needs a Read.
	_, err = run(t, env, tools.Write{}, map[string]any{"file_path": "app.py", "content": "x\n"})
	wantCode(t, err, tools.CodeNotRead)

	// A full read permits both.
	if _, err := run(t, env, tools.Read{}, map[string]any{"file_path": "app.py"}); err != nil {
		t.Fatal(err)
	}
	// The write counts as a read: a second Edit needs no new Read.
	if _, err := run(t, env, tools.Edit{}, map[string]any{"file_path": "app.py", "old_string": "line 3", "new_string": "line three"}); err != nil {
		t.Fatalf("second Edit: %v", err)
	}
	// An outside change makes the next write stale.
	if err := os.WriteFile(p, []byte("rewritten by the user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, env, tools.Write{}, map[string]any{"file_path": "app.py", "content": "mine\n"})
	wantCode(t, err, tools.CodeStale)
	if got, _ := os.ReadFile(p); string(got) != "rewritten by the user\n" {
		t.Fatalf("a refused write changed the file: %q", got)
	}

	// Compaction resets dedup but keeps the right to write.
	if _, err := run(t, env, tools.Read{}, map[string]any{"file_path": "app.py"}); err != nil {
		t.Fatal(err)
	}
	env.State.ResetDedup()
	res, err := run(t, env, tools.Read{}, map[string]any{"file_path": "app.py"})
	if err != nil || !strings.Contains(res.Blocks[0].Text, "rewritten by the user") {
		t.Fatalf("Read after ResetDedup must return the content: %v %+v", err, res)
	}
	if _, err := run(t, env, tools.Write{}, map[string]any{"file_path": "app.py", "content": "mine\n"}); err != nil {
		t.Fatalf("Write after compaction: %v", err)
	}
}

// Eight parallel Edits of one file, each from its own session that read
// the same version: exactly one wins, the others get code 3, nothing is
// lost silently.
func TestContractParallelEditsOneRead(t *testing.T) {
	t.Parallel()
	base, dir := contractEnv(t)
	p := filepath.Join(dir, "counter.txt")
	var lines []string
	for i := range 8 {
		lines = append(lines, fmt.Sprintf("slot %d: empty", i))
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	envs := make([]*tools.Env, 8)
	for i := range envs {
		envs[i] = &tools.Env{FS: base.FS, State: tools.NewReadState(), Limits: base.Limits}
		if _, err := run(t, envs[i], tools.Read{}, map[string]any{"file_path": "counter.txt"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, errs[i] = run(t, envs[i], tools.Edit{}, map[string]any{
				"file_path": "counter.txt", "old_string": fmt.Sprintf("slot %d: empty", i), "new_string": fmt.Sprintf("slot %d: taken", i)})
		})
	}
	wg.Wait()
	got, _ := os.ReadFile(p)
	won := 0
	for i, err := range errs {
		applied := strings.Contains(string(got), fmt.Sprintf("slot %d: taken", i))
		switch {
		case err == nil:
			won++
			if !applied {
				t.Errorf("edit %d reported success but is not in the file: a silent loss", i)
			}
		case errors.Is(err, &tools.Error{Code: tools.CodeStale}):
			if applied {
				t.Errorf("edit %d was refused but applied", i)
			}
		default:
			t.Errorf("edit %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d edits won on the same read version, want exactly 1\n%s", won, got)
	}
}

// The same eight Edits from one session, serialised by the lock and each
// re-reading after a loss: all end up applied.
func TestContractParallelEditsRetry(t *testing.T) {
	t.Parallel()
	env, dir := contractEnv(t)
	p := filepath.Join(dir, "list.txt")
	var lines []string
	for i := range 8 {
		lines = append(lines, fmt.Sprintf("item %d", i))
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, env, tools.Read{}, map[string]any{"file_path": "list.txt"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				_, err := run(t, env, tools.Edit{}, map[string]any{"file_path": "list.txt", "old_string": fmt.Sprintf("item %d\n", i), "new_string": fmt.Sprintf("item %d done\n", i)})
				if err == nil {
					return
				}
				if !errors.Is(err, &tools.Error{Code: tools.CodeStale}) {
					t.Errorf("edit %d: %v", i, err)
					return
				}
				time.Sleep(time.Millisecond)
				if _, err := run(t, env, tools.Read{}, map[string]any{"file_path": "list.txt"}); err != nil {
					t.Errorf("re-read: %v", err)
					return
				}
			}
			t.Errorf("edit %d never won", i)
		})
	}
	wg.Wait()
	got, _ := os.ReadFile(p)
	for i := range 8 {
		if !strings.Contains(string(got), fmt.Sprintf("item %d done\n", i)) {
			t.Errorf("edit %d lost:\n%s", i, got)
		}
	}
}
