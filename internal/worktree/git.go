package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/procgroup"
)

// maxGitOutput bounds what one git command may print before ferry stops
// keeping it (the rest is read and dropped, so git never blocks).
const maxGitOutput = 64 << 20

// gitEnv is the environment of every git child: the user's, without
// anything that would redirect git (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE
// set by a hook that started ferry…), in the C locale so that messages
// parse, and with every prompt and pager off. extra goes last and wins.
func gitEnv(extra ...string) []string {
	env := make([]string, 0, len(os.Environ())+8)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GIT_"), k == "LC_ALL", k == "LANG", k == "LANGUAGE", k == "PAGER", k == "SSH_ASKPASS":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat", "PAGER=cat",
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes",
		"GIT_OPTIONAL_LOCKS=0",
	)
	return append(env, extra...)
}

// gitResult is one git command's outcome.
type gitResult struct {
	out    []byte
	stderr string
	code   int // exit code, -1 when it did not run to an exit
}

// gitCmd is one git invocation: `git -C dir args…`.
type gitCmd struct {
	dir   string
	args  []string
	env   []string // extra variables
	stdin io.Reader
	// limit bounds the stdout kept (maxGitOutput when 0); truncated
	// reports that more was printed.
	limit int
}

// run runs c as a child in a session of its own (procgroup), killed with
// its tree when ctx ends. A non-zero exit is not an error here: callers
// read res.code; err is for git that could not run or was cancelled.
func (c gitCmd) run(ctx context.Context) (res gitResult, truncated bool, err error) {
	if err := ctx.Err(); err != nil {
		return gitResult{code: -1}, false, err
	}
	args := append([]string{"-C", c.dir, "--no-pager", "-c", "core.quotePath=false", "-c", "color.ui=false"}, c.args...)
	cmd := exec.Command("git", args...) //nolint:gosec // git, with arguments this package builds
	cmd.Env = gitEnv(c.env...)
	cmd.Stdin = c.stdin
	limit := c.limit
	if limit <= 0 {
		limit = maxGitOutput
	}
	out := &capBuffer{max: limit}
	errBuf := &capBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, errBuf
	cmd.WaitDelay = 2 * time.Second
	g, err := procgroup.Start(cmd)
	if err != nil {
		return gitResult{code: -1}, false, gitMissing(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		g.KillTree()
		werr = <-done
		return gitResult{code: -1, stderr: errBuf.String()}, false, errors.Join(ctx.Err(), werr)
	}
	g.KillTree() // whatever it left (a credential helper, ssh)
	res = gitResult{out: out.Bytes(), stderr: errBuf.String(), code: 0}
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		res.code = ee.ExitCode()
	default:
		return gitResult{code: -1, stderr: errBuf.String()}, false, werr
	}
	return res, out.dropped, nil
}

func gitMissing(err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return newError(CodeGitMissing, "git is not installed: install it (e.g. apt-get install git)", err)
	}
	return newError(CodeGitFailed, "could not start git", err)
}

// git runs `git -C dir args…` and returns its stdout, failing with a coded
// git_failed error on a non-zero exit.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitCmd{dir: dir, args: args}.output(ctx)
}

func (c gitCmd) output(ctx context.Context) (string, error) {
	res, _, err := c.run(ctx)
	if err != nil {
		return "", wrapRun(err, c.args)
	}
	if res.code != 0 {
		return "", gitFailed(c.args, res)
	}
	return string(res.out), nil
}

func wrapRun(err error, args []string) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return newError(CodeCancelled, fmt.Sprintf("git %s was stopped before it ended", gitVerb(args)), err)
	}
	return newError(CodeGitFailed, fmt.Sprintf("git %s could not run", gitVerb(args)), err)
}

func gitFailed(args []string, res gitResult) error {
	msg := firstLines(res.stderr, 3)
	if msg == "" {
		msg = "exit status " + strconv.Itoa(res.code)
	}
	return newError(CodeGitFailed, fmt.Sprintf("git %s failed: %s", gitVerb(args), msg), fmt.Errorf("git %s: exit status %d", strings.Join(args, " "), res.code))
}

func gitVerb(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// firstLines is up to n non-empty lines of s, joined by "; ".
func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return strings.Join(out, "; ")
}

// capBuffer keeps the first max bytes written to it and drops the rest,
// reporting that it did.
type capBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room < len(p) {
		b.dropped = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

func (b *capBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

func (b *capBuffer) String() string { return string(b.Bytes()) }

// splitZ splits NUL-terminated git output.
func splitZ(s string) []string {
	s = strings.TrimSuffix(s, "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

var (
	versionOnce sync.Once
	versionMaj  int
	versionMin  int
	versionErr  error
)

// requireGit reports a git_too_old error when the machine's git is older
// than major.minor.
func requireGit(ctx context.Context, major, minor int, what string) error {
	versionOnce.Do(func() {
		out, err := git(ctx, os.TempDir(), "version")
		if err != nil {
			versionErr = err
			return
		}
		f := strings.Fields(out) // git version 2.39.5
		if len(f) < 3 {
			versionErr = newError(CodeGitFailed, "cannot read git's version from "+strconv.Quote(out), nil)
			return
		}
		parts := strings.SplitN(f[2], ".", 3)
		versionMaj, _ = strconv.Atoi(parts[0])
		if len(parts) > 1 {
			versionMin, _ = strconv.Atoi(parts[1])
		}
	})
	if versionErr != nil {
		return versionErr
	}
	if versionMaj < major || versionMaj == major && versionMin < minor {
		return newError(CodeGitTooOld, fmt.Sprintf("%s needs git %d.%d or newer, this machine has %d.%d: upgrade git", what, major, minor, versionMaj, versionMin), nil)
	}
	return nil
}
