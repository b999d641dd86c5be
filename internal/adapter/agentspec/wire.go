package agentspec

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp"
	"github.com/ferry-dev/ferry/internal/adapter/claudecode"
)

// buildClaudeCode makes the Claude Code adapter: the spec's command (its
// executable and extra arguments) or claude on PATH.
func buildClaudeCode(s Spec, opts Options, log *slog.Logger) adapter.Adapter {
	cfg := claudecode.Config{Logger: log, HostCommand: opts.HostCommand}
	if len(s.Command) > 0 {
		cfg.Command, cfg.Args = absCommand(s.Command[0]), slices.Clone(s.Command[1:])
	}
	if opts.StateDir != "" {
		cfg.StateDir = filepath.Join(opts.StateDir, ClaudeCode)
	}
	return claudecode.New(cfg)
}

// buildACP makes the adapter of an ACP agent run as the spec's command.
func buildACP(s Spec, opts Options, log *slog.Logger) (adapter.Adapter, error) {
	cmd := slices.Clone(s.Command)
	if len(cmd) > 0 {
		cmd[0] = absCommand(cmd[0])
	}
	return acp.New(acp.Config{Command: cmd, Logger: log, HostCommand: opts.HostCommand})
}

// absCommand makes a command path with a separator absolute against the
// current directory, where the user typed it: the agent itself runs in the
// workspace, where a relative path would mean something else. A bare name
// stays as it is, for a PATH lookup.
func absCommand(name string) string {
	if !strings.ContainsRune(name, filepath.Separator) || filepath.IsAbs(name) {
		return name
	}
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}
