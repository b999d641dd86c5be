package mcpconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/mcpclient"
)

// Sources are where a session's configured MCP servers come from.
type Sources struct {
	// Workspace is the session's canonical workspace path: its
	// WorkspaceFile is read, and approvals are keyed by it.
	Workspace string
	// UserFile is the user's configuration ("" : none).
	UserFile string
	// Approvals keeps the user's decisions (nil: a workspace's file is
	// only used with Trust).
	Approvals *Approvals
	// Trust approves the workspace's file for this session without asking
	// and without recording it (ferry run --trust-mcp).
	Trust bool
	// Getenv expands ${VAR} in the servers (nil: os.Getenv).
	Getenv func(string) string
}

// DefaultSources are a session's sources on workspace with the user's
// file and approvals where getenv's XDG_CONFIG_HOME, XDG_STATE_HOME and
// HOME put them (getenv nil: os.Getenv).
func DefaultSources(workspace string, getenv func(string) string) (*Sources, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := UserConfigDir(getenv)
	if err != nil {
		return nil, err
	}
	state, err := filehistory.DefaultStateDir(getenv)
	if err != nil {
		return nil, fmt.Errorf("mcpconfig: %w", err)
	}
	return &Sources{Workspace: workspace, UserFile: filepath.Join(cfg, UserFile),
		Approvals: OpenApprovals(filepath.Join(state, ApprovalsFile)), Getenv: getenv}, nil
}

// UserConfigDir is ferry's user configuration folder,
// $XDG_CONFIG_HOME/ferry, else $HOME/.config/ferry.
func UserConfigDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ferry"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("mcpconfig: find the home folder: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".config", "ferry"), nil
}

// WorkspaceConfig is the workspace's .mcp.json as found now.
type WorkspaceConfig struct {
	Path string
	// SHA256 keys the approval of this content.
	SHA256 string
	// Servers are its usable servers, not expanded.
	Servers []mcpclient.Server
	// Decision is the user's recorded say on this content.
	Decision Decision
}

// Loaded is what the sources hold now.
type Loaded struct {
	// User are the user's servers, expanded.
	User []mcpclient.Server
	// Workspace is nil when the workspace has no .mcp.json.
	Workspace *WorkspaceConfig
	// Problems are every *Error met (bad files, bad servers, unset
	// variables, unreadable approvals).
	Problems []error
}

// Load reads both files (each turn: they are small, and a changed file
// must take effect at the next turn).
func (s *Sources) Load() Loaded {
	var l Loaded
	add := func(err error) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			l.Problems = append(l.Problems, j.Unwrap()...)
			return
		}
		l.Problems = append(l.Problems, err)
	}
	if s.UserFile != "" {
		if b, err := readConfig(s.UserFile); err != nil {
			add(err)
		} else if b != nil {
			servers, err := Parse(b, s.UserFile)
			add(err)
			servers, err = Expand(servers, s.UserFile, s.getenv())
			add(err)
			l.User = servers
		}
	}
	path := filepath.Join(s.Workspace, WorkspaceFile)
	b, err := readConfig(path)
	add(err)
	if b == nil {
		return l
	}
	servers, err := Parse(b, path)
	add(err)
	w := &WorkspaceConfig{Path: path, SHA256: Sum(b), Servers: servers}
	if s.Approvals != nil {
		d, err := s.Approvals.Decision(s.Workspace, w.SHA256)
		add(err)
		w.Decision = d
	}
	l.Workspace = w
	return l
}

// Servers are the workspace's servers, expanded, once approved; their
// problems are returned (ErrBadConfig).
func (s *Sources) Servers(w *WorkspaceConfig) ([]mcpclient.Server, error) {
	return Expand(w.Servers, w.Path, s.getenv())
}

func (s *Sources) getenv() func(string) string {
	if s.Getenv == nil {
		return os.Getenv
	}
	return s.Getenv
}

// readConfig reads a configuration file: nil without error when there is
// none; a folder, a special file or an oversized one is an *Error. A
// symbolic link is followed: the content is what is approved.
func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // the configuration file's own path
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Code: CodeShape, Path: path, Reason: "cannot read it: " + err.Error(), Err: err}
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, &Error{Code: CodeShape, Path: path, Reason: "not a regular file", Err: err}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{Code: CodeShape, Path: path, Reason: "cannot read it: " + err.Error(), Err: err}
	}
	if len(b) > MaxFileSize {
		return nil, &Error{Code: CodeTooLarge, Path: path, Reason: fmt.Sprintf("over the %d KB a configuration may have", MaxFileSize>>10)}
	}
	return b, nil
}
