package lsp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of Config fields left zero.
const (
	// DefaultWait is how long a tool waits for a server's diagnostics of
	// the version it sent before it returns without them.
	DefaultWait = 3 * time.Second
	// DefaultMaxLines caps the diagnostic lines of one result.
	DefaultMaxLines = 20
	// MaxRestarts is how often a server that crashed is started again
	// before the manager gives up on it for the session.
	MaxRestarts = 3
)

// Severity names accepted in Config.Severity.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Config is the user's lsp.json ($XDG_CONFIG_HOME/ferry/lsp.json); the
// zero value is the defaults: the servers of the default table that are
// on PATH, errors only, a 3 s wait, 20 lines.
type Config struct {
	// Disabled turns diagnostics off for every language.
	Disabled bool `json:"disabled,omitempty"`
	// WaitMS bounds the wait of one tool call for diagnostics (DefaultWait).
	WaitMS int `json:"wait_ms,omitempty"`
	// Severity is the least severe diagnostic reported: "error" (default)
	// or "warning".
	Severity string `json:"severity,omitempty"`
	// MaxLines caps the diagnostic lines of one result (DefaultMaxLines).
	MaxLines int `json:"max_lines,omitempty"`
	// Servers override the default table per file extension (".go").
	Servers map[string]ServerConfig `json:"servers,omitempty"`
}

// ServerConfig is the server of one file extension.
type ServerConfig struct {
	// Command is the server's argv, speaking LSP on stdin/stdout; its
	// first word is looked up on PATH. Empty keeps the default server.
	Command []string `json:"command,omitempty"`
	// LanguageID is the LSP language id of the extension's files (the
	// default table's, else the extension without its dot).
	LanguageID string `json:"language_id,omitempty"`
	// Disabled turns diagnostics off for this extension.
	Disabled bool `json:"disabled,omitempty"`
	// WaitMS replaces Config.WaitMS for this extension (a server that
	// loads a whole project first, such as rust-analyzer, may want more).
	WaitMS int `json:"wait_ms,omitempty"`
	// InitializationOptions are sent as initialize's
	// initializationOptions.
	InitializationOptions json.RawMessage `json:"initialization_options,omitempty"`
}

// defaultServer is one row of the default table: the first candidate
// found on PATH serves the extension.
type defaultServer struct {
	candidates [][]string
	languageID string
	// initOpts are sent when the user's lsp.json gives none.
	initOpts json.RawMessage
}

// rustSafe keeps rust-analyzer from running the repository's code: build
// scripts, procedural macros and cargo check (which runs both) would
// execute whatever a cloned repository holds at the agent's first edit
// of a .rs file, without anyone having approved it. Its own analysis
// still reports type errors.
var rustSafe = json.RawMessage(`{"cargo":{"buildScripts":{"enable":false}},"procMacro":{"enable":false},"checkOnSave":false}`)

var (
	pyright    = [][]string{{"basedpyright-langserver", "--stdio"}, {"pyright-langserver", "--stdio"}}
	typescript = [][]string{{"typescript-language-server", "--stdio"}}
)

var defaultServers = map[string]defaultServer{
	".go":  {[][]string{{"gopls"}}, "go", nil},
	".py":  {pyright, "python", nil},
	".pyi": {pyright, "python", nil},
	".ts":  {typescript, "typescript", nil},
	".mts": {typescript, "typescript", nil},
	".cts": {typescript, "typescript", nil},
	".tsx": {typescript, "typescriptreact", nil},
	".js":  {typescript, "javascript", nil},
	".mjs": {typescript, "javascript", nil},
	".cjs": {typescript, "javascript", nil},
	".jsx": {typescript, "javascriptreact", nil},
	".rs":  {[][]string{{"rust-analyzer"}}, "rust", rustSafe},
}

// ErrConfig marks a config file ferry cannot use.
var ErrConfig = errors.New("lsp: bad config")

// ConfigPath is where the user's lsp.json lives: $XDG_CONFIG_HOME/ferry,
// else $HOME/.config/ferry; "" when neither is set.
func ConfigPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "ferry", "lsp.json")
}

// LoadConfig reads the user's lsp.json (ConfigPath); a missing file is the
// defaults. A file that is not valid (unknown field, bad severity, a
// negative bound, an extension without its dot) is an error wrapping
// ErrConfig that names the file and the fault.
func LoadConfig(getenv func(string) string) (Config, error) {
	path := ConfigPath(getenv)
	if path == "" {
		return Config{}, nil
	}
	data, err := os.ReadFile(path) // #nosec G304 -- the user's own config file
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	if err := c.validate(); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	return c, nil
}

func (c Config) validate() error {
	switch c.Severity {
	case "", SeverityError, SeverityWarning:
	default:
		return fmt.Errorf("severity %q: use %q or %q", c.Severity, SeverityError, SeverityWarning)
	}
	if c.WaitMS < 0 || c.MaxLines < 0 {
		return errors.New("wait_ms and max_lines may not be negative")
	}
	if c.WaitMS > MaxWaitMS {
		return fmt.Errorf("wait_ms %d: at most %d (an edit never waits longer for its diagnostics)", c.WaitMS, MaxWaitMS)
	}
	for ext, s := range c.Servers {
		if !strings.HasPrefix(ext, ".") || len(ext) < 2 || strings.ContainsAny(ext, `/\`) {
			return fmt.Errorf("servers: %q is not a file extension such as \".go\"", ext)
		}
		if s.WaitMS < 0 || s.WaitMS > MaxWaitMS {
			return fmt.Errorf("servers[%q].wait_ms %d: use 0 to %d", ext, s.WaitMS, MaxWaitMS)
		}
		if len(s.Command) > 0 && s.Command[0] == "" {
			return fmt.Errorf("servers[%q].command has an empty program", ext)
		}
	}
	return nil
}

// MaxWaitMS bounds wait_ms: a tool call never waits longer than this for
// diagnostics (and a larger number would overflow a time.Duration).
const MaxWaitMS = 300_000

func (c Config) wait(s ServerConfig) time.Duration {
	switch {
	case s.WaitMS > 0:
		return time.Duration(s.WaitMS) * time.Millisecond
	case c.WaitMS > 0:
		return time.Duration(c.WaitMS) * time.Millisecond
	}
	return DefaultWait
}

// resolved is what serves one extension: a server's argv found on PATH.
type resolved struct {
	argv       []string
	languageID string
	wait       time.Duration
	initOpts   json.RawMessage
}

// resolve finds the server of ext (lower case, with its dot), nil when
// none is configured, none is on PATH, or it is disabled.
func (c Config) resolve(ext string, lookPath func(string) (string, error)) *resolved {
	if c.Disabled {
		return nil
	}
	user, hasUser := c.Servers[ext]
	if hasUser && user.Disabled {
		return nil
	}
	def, hasDef := defaultServers[ext]
	r := &resolved{languageID: def.languageID, wait: c.wait(user), initOpts: user.InitializationOptions}
	if len(r.initOpts) == 0 {
		r.initOpts = def.initOpts
	}
	if user.LanguageID != "" {
		r.languageID = user.LanguageID
	}
	if r.languageID == "" {
		r.languageID = strings.TrimPrefix(ext, ".")
	}
	candidates := def.candidates
	if len(user.Command) > 0 {
		candidates = [][]string{user.Command}
	} else if !hasDef {
		return nil
	}
	for _, argv := range candidates {
		exe, err := lookPath(argv[0])
		if err != nil {
			continue
		}
		r.argv = append([]string{exe}, argv[1:]...)
		return r
	}
	return nil
}
