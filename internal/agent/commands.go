package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ferry-dev/ferry/internal/lazyregexp"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// MaxCommandBytes bounds a custom command's file: a larger one is listed
// but refused when run, with an error naming it.
const MaxCommandBytes = 64 << 10

// WorkspaceCommands is the workspace's folder of custom commands.
const WorkspaceCommands = ".ferry/commands"

// customCommand is one Markdown file of a commands folder.
type customCommand struct {
	protocol.AgentCommand
	path string // as the user knows it: workspace-relative or absolute
	body string // the text after the front matter
	size int64  // over MaxCommandBytes: refused when run
}

// commandSet is the custom commands found by one scan, and what was
// skipped (logged once per change).
type commandSet struct {
	byName  map[string]customCommand
	list    []protocol.AgentCommand // sorted by name
	skipped []string
}

// builtinCommand reports whether name is one of ferry's own commands,
// which win over a file of the same name.
func builtinCommand(name string) bool {
	return slices.ContainsFunc(SlashCommands(), func(c protocol.AgentCommand) bool { return strings.EqualFold(c.Name, name) })
}

// loadCommands scans the user's folder, then the workspace's (which wins
// on a name clash). A file whose name is no valid command name, or is a
// built-in's, is skipped.
func (a *Agent) loadCommands() commandSet {
	set := commandSet{byName: map[string]customCommand{}}
	if a.userCommands != "" {
		ents, err := os.ReadDir(a.userCommands)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			set.skipped = append(set.skipped, a.userCommands+": "+err.Error())
		}
		a.addCommands(&set, ents, func(name string) (io.ReadCloser, string, error) {
			p := filepath.Join(a.userCommands, name)
			f, _, err := openRegular(p, p) // the user's own folder
			return f, p, err
		})
	}
	ents, err := a.fs.ReadDir(WorkspaceCommands)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		set.skipped = append(set.skipped, WorkspaceCommands+": "+err.Error())
	}
	a.addCommands(&set, ents, func(name string) (io.ReadCloser, string, error) {
		p := WorkspaceCommands + "/" + name
		f, err := a.fs.Open(p) // the file tools' confinement: no link out
		return f, p, err
	})
	for _, c := range set.byName {
		set.list = append(set.list, c.AgentCommand)
	}
	slices.SortFunc(set.list, func(x, y protocol.AgentCommand) int { return strings.Compare(x.Name, y.Name) })
	return set
}

// addCommands adds the *.md files of ents, each opened with open.
func (a *Agent) addCommands(set *commandSet, ents []fs.DirEntry, open func(string) (io.ReadCloser, string, error)) {
	for _, e := range ents {
		file := e.Name()
		name, ok := strings.CutSuffix(file, ".md")
		if !ok || e.IsDir() {
			continue
		}
		if !protocol.ValidCommandName(name) {
			set.skipped = append(set.skipped, fmt.Sprintf("%s: %q is not a command name (letters, digits, _ : . - and at most 64 bytes)", file, name))
			continue
		}
		if builtinCommand(name) {
			set.skipped = append(set.skipped, fmt.Sprintf("%s: /%s is ferry's own command", file, name))
			continue
		}
		c, err := readCommand(open, file)
		if err != nil {
			set.skipped = append(set.skipped, err.Error())
			continue
		}
		c.Name = name
		set.byName[name] = c
	}
}

// readCommand reads one command file, at most MaxCommandBytes of it.
func readCommand(open func(string) (io.ReadCloser, string, error), file string) (customCommand, error) {
	r, path, err := open(file)
	if err != nil {
		return customCommand{}, fmt.Errorf("%s: %w", file, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, MaxCommandBytes+1))
	if err != nil {
		return customCommand{}, fmt.Errorf("%s: %w", path, err)
	}
	c := customCommand{path: path, size: int64(len(data))}
	if len(data) > MaxCommandBytes {
		switch f := r.(type) {
		case interface{ Stat() (fs.FileInfo, error) }: // *os.File
			if fi, err := f.Stat(); err == nil {
				c.size = fi.Size()
			}
		case vfs.File:
			c.size = f.Info().Stamp.Size
		}
		c.Description = fmt.Sprintf("too large to run (over %d KiB)", MaxCommandBytes>>10)
		return c, nil
	}
	c.Description, c.Hint, c.body = parseCommand(string(data))
	return c, nil
}

// parseCommand splits a command file into its description (front
// matter's description:, else its first line), argument hint (front
// matter's argument-hint:) and body (the text after the front matter).
func parseCommand(data string) (desc, hint, body string) {
	body = strings.ReplaceAll(data, "\r\n", "\n")
	if rest, ok := strings.CutPrefix(body, "---\n"); ok {
		if fm, after, ok := strings.Cut(rest, "\n---"); ok {
			_, body, _ = strings.Cut(after, "\n") // the rest of the closing line goes too
			for _, line := range strings.Split(fm, "\n") {
				k, v, _ := strings.Cut(line, ":")
				v = unquote(strings.TrimSpace(v))
				switch strings.TrimSpace(k) {
				case "description":
					desc = v
				case "argument-hint":
					hint = v
				}
			}
		}
	}
	if desc == "" {
		for _, line := range strings.Split(body, "\n") {
			if line = strings.TrimSpace(strings.TrimLeft(line, "# ")); line != "" {
				desc = line
				break
			}
		}
	}
	return runecut.Ellipsis(desc, 200), runecut.Prefix(hint, 256), body
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return s[1 : len(s)-1]
	}
	return s
}

var placeholder = lazyregexp.New(`\$(ARGUMENTS|[1-9])`)

// expandCommand is a command's body with $ARGUMENTS replaced by args and
// $1..$9 by its words ("" past the last); args are appended when the body
// has no placeholder, so they are never lost.
func expandCommand(body, args string) string {
	words := strings.Fields(args)
	used := false
	out := placeholder.ReplaceAllStringFunc(body, func(m string) string {
		used = true
		if m == "$ARGUMENTS" {
			return args
		}
		if i := int(m[1] - '1'); i < len(words) {
			return words[i]
		}
		return ""
	})
	out = strings.TrimRight(out, "\n")
	if !used && args != "" {
		out += "\n\nArguments: " + args
	}
	return out
}

// custom finds the custom command a slash line names, with its
// arguments; ok false when it names none (or a built-in).
func (a *Agent) custom(line string) (c customCommand, args string, ok bool) {
	name, args, _ := strings.Cut(strings.TrimSpace(line), " ")
	name, found := strings.CutPrefix(name, "/")
	if !found || builtinCommand(name) {
		return customCommand{}, "", false
	}
	a.mu.Lock()
	c, ok = a.cmds.byName[name]
	a.mu.Unlock()
	return c, strings.TrimSpace(args), ok
}

// expand is the prompt text of custom command c run with args, or a coded
// error when its file is too large.
func (c customCommand) expand(args string) (string, error) {
	if c.size > MaxCommandBytes {
		return "", &Error{Code: CodeBadRequest, Message: fmt.Sprintf("/%s: %s has %d bytes, over the %d KiB a command file may have; shorten it", c.Name, c.path, c.size, MaxCommandBytes>>10)}
	}
	return expandCommand(c.body, args), nil
}

// Commands are the session's slash commands as agent.commands lists them:
// ferry's own (SlashCommands), then the custom ones by name.
func (a *Agent) Commands() []protocol.AgentCommand {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Concat(SlashCommands(), a.cmds.list)
}

// Refresh reloads the instruction files and the custom commands, and
// calls Config.OnInstructions and Config.OnCommands with what changed.
// Each turn start calls it; a caller may call it any time (the builtin
// adapter does, every few seconds, so the UI's menu follows the folder).
func (a *Agent) Refresh() {
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	files, changed := a.refreshInstructions()
	if changed && a.onInstructions != nil {
		a.onInstructions(files)
	}
	set := a.loadCommands()
	a.mu.Lock()
	same := slices.Equal(a.cmds.list, set.list)
	logSkipped := !slices.Equal(a.cmds.skipped, set.skipped)
	a.cmds = set
	a.mu.Unlock()
	if logSkipped {
		for _, s := range set.skipped {
			a.log.Warn("custom command skipped", "why", s)
		}
	}
	if !same && a.onCommands != nil {
		a.onCommands(a.Commands())
	}
}
