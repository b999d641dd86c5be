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

// Test runs the worktree's .ferry/test as Setup runs .ferry/setup
// (DefaultTestTimeout when 0); a failure is test_failed with the exit
// status.
func (w *Worktree) Test(ctx context.Context, out io.Writer, timeout time.Duration) (ran bool, err error) {
	if timeout <= 0 {
		timeout = DefaultTestTimeout
	}
	return w.runScript(ctx, TestScript, CodeTestFailed, "the tests fail in this worktree", out, timeout)
}

// runScript runs the script rel of the worktree (see Setup).
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
		return true, newError(code, "cannot start "+rel, err)
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
		return true, newError(code, fmt.Sprintf("%s ran longer than %s and was stopped: make it faster, or allow it longer", rel, timeout), err)
	case <-ctx.Done():
		g.KillTree()
		err = errors.Join(ctx.Err(), <-done)
		return true, newError(CodeCancelled, rel+" was stopped", err)
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
		return true, newError(code, fmt.Sprintf("%s failed (%s): see its output; %s", rel, status, hint), err)
	}
	return true, nil
}
