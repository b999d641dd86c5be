package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/procgroup"
)

// The workspace's scripts, committed in the repository.
const (
	// SetupScript is run in a new worktree (e.g. npm ci).
	SetupScript = ".ferry/setup"
	// TestScript is the workspace's test command (best of N compares
	// its result across worktrees).
	TestScript = ".ferry/test"
)

// Default bounds of the scripts when the caller gives none.
const (
	DefaultSetupTimeout = 10 * time.Minute
	DefaultTestTimeout  = 10 * time.Minute
)

// Setup runs the worktree's .ferry/setup, if it has one (ran false when
// not), in the worktree, with its output and errors streamed to out;
// bounded by timeout (DefaultSetupTimeout when 0), after which it is
// killed with everything it started. A failure is setup_failed with the
// exit status.
func (w *Worktree) Setup(ctx context.Context, out io.Writer, timeout time.Duration) (ran bool, err error) {
	if timeout <= 0 {
		timeout = DefaultSetupTimeout
	}
	return w.runScript(ctx, SetupScript, CodeSetupFailed, "fix it, then create the worktree again", out, timeout)
}

// Test runs the workspace's .ferry/test in the worktree as Setup runs
// .ferry/setup (DefaultTestTimeout when 0); a failure is test_failed with
// the exit status. The script is the one committed on the base branch,
// never the worktree's: the agent edits the worktree, and a .ferry/test
// it wrote would run as a command nobody allowed it (what the script
// then runs, the worktree's tests, is the user's to judge).
func (w *Worktree) Test(ctx context.Context, out io.Writer, timeout time.Duration) (ran bool, err error) {
	if timeout <= 0 {
		timeout = DefaultTestTimeout
	}
	if err := w.present(); err != nil {
		return false, err
	}
	script, cleanup, err := w.baseScript(ctx, TestScript)
	if err != nil || script == "" {
		return false, err
	}
	defer cleanup()
	return true, w.execScript(ctx, script, TestScript, CodeTestFailed, "the tests fail in this worktree", out, timeout)
}

// baseScript copies the base branch's committed rel into a private
// temporary file and returns its path ("" when the base has none) and
// what removes it.
func (w *Worktree) baseScript(ctx context.Context, rel string) (string, func(), error) {
	ls, err := git(ctx, w.Path, "ls-tree", "-z", "refs/heads/"+w.Base, "--", rel)
	if err != nil {
		return "", nil, newError(CodeTestFailed, "cannot read "+rel+" of "+w.Base, err)
	}
	fields := strings.Fields(strings.TrimSuffix(ls, "\x00"))
	if len(fields) < 3 {
		return "", nil, nil // the base has no such script
	}
	if fields[0] != "100755" || fields[1] != "blob" {
		return "", nil, newError(CodeTestFailed, fmt.Sprintf("%s on %s is not an executable file: chmod +x it and commit that on %s", rel, w.Base, w.Base), nil)
	}
	body, err := git(ctx, w.Path, "cat-file", "blob", fields[2])
	if err != nil {
		return "", nil, newError(CodeTestFailed, "cannot read "+rel+" of "+w.Base, err)
	}
	dir, err := os.MkdirTemp("", "ferry-script-")
	if err != nil {
		return "", nil, newError(CodeTestFailed, "cannot copy "+rel, err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	path := filepath.Join(dir, filepath.Base(rel))
	if err := os.WriteFile(path, []byte(body), 0o700); err != nil { //nolint:gosec // an executable script, in a 0700 folder of its own
		cleanup()
		return "", nil, newError(CodeTestFailed, "cannot copy "+rel, err)
	}
	return path, cleanup, nil
}

// runScript runs the worktree's script rel (see Setup).
func (w *Worktree) runScript(ctx context.Context, rel, code, hint string, out io.Writer, timeout time.Duration) (bool, error) {
	if err := w.present(); err != nil {
		return false, err
	}
	script := filepath.Join(w.Path, filepath.FromSlash(rel))
	fi, err := os.Stat(script)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, newError(code, "cannot read "+rel, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return false, newError(code, fmt.Sprintf("%s is not an executable file: chmod +x it (and commit that)", rel), nil)
	}
	return true, w.execScript(ctx, script, rel, code, hint, out, timeout)
}

// execScript runs the file script (the workspace's rel) in the worktree.
func (w *Worktree) execScript(ctx context.Context, script, rel, code, hint string, out io.Writer, timeout time.Duration) error {
	if out == nil {
		out = io.Discard
	}
	cmd := exec.Command(script) //nolint:gosec // running the workspace's own script is the point
	cmd.Dir = w.Path
	cmd.Env = append(gitEnv(), "FERRY_WORKTREE="+w.Path, "FERRY_REPO="+w.Repo.Top, "FERRY_BRANCH="+w.Branch, "FERRY_BASE="+w.Base)
	// The same writer for both: exec copies them through one pipe, in order.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	g, err := procgroup.Start(cmd)
	if err != nil {
		return newError(code, "cannot start "+rel, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-done:
		g.KillTree() // what it left running in the background
	case <-timer.C:
		g.KillTree()
		err = errors.Join(context.DeadlineExceeded, <-done)
		return newError(code, fmt.Sprintf("%s ran longer than %s and was stopped: make it faster, or allow it longer", rel, timeout), err)
	case <-ctx.Done():
		g.KillTree()
		err = errors.Join(ctx.Err(), <-done)
		return newError(CodeCancelled, rel+" was stopped", err)
	}
	if err != nil {
		status := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = "exit status " + strconv.Itoa(ee.ExitCode())
			if sig, ok := procgroup.ExitSignal(ee.ProcessState); ok {
				status = "killed by " + sig.String()
			}
		}
		return newError(code, fmt.Sprintf("%s failed (%s): see its output; %s", rel, status, hint), err)
	}
	return nil
}
