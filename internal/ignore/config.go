package ignore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Env locates the user's git configuration. Tests build one by hand; the
// daemon uses OSEnv.
type Env struct {
	// Home is $HOME ("" for none).
	Home string
	// XDGConfigHome is $XDG_CONFIG_HOME; "" means Home/.config.
	XDGConfigHome string
	// GlobalConfig, when set, is the only global config file
	// ($GIT_CONFIG_GLOBAL); otherwise XDG's git/config and ~/.gitconfig.
	GlobalConfig string
	// SystemConfig is the system-wide config file ("" for none).
	SystemConfig string
	// ReadFile reads a configuration or exclude file; nil reads regular
	// files from disk (following symlinks, as git does for these files).
	ReadFile func(name string) ([]byte, error)
}

// OSEnv is the Env of the running process, from its environment.
func OSEnv() Env {
	e := Env{
		Home:          os.Getenv("HOME"),
		XDGConfigHome: os.Getenv("XDG_CONFIG_HOME"),
		GlobalConfig:  os.Getenv("GIT_CONFIG_GLOBAL"),
	}
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		e.SystemConfig = "/etc/gitconfig"
		if s := os.Getenv("GIT_CONFIG_SYSTEM"); s != "" {
			e.SystemConfig = s
		}
	}
	return e
}

func (e Env) readFile() func(string) ([]byte, error) {
	if e.ReadFile != nil {
		return e.ReadFile
	}
	return func(name string) ([]byte, error) { return readRegular(name, true) }
}

func (e Env) xdgConfigHome() string {
	if e.XDGConfigHome != "" {
		return e.XDGConfigHome
	}
	if e.Home != "" {
		return filepath.Join(e.Home, ".config")
	}
	return ""
}

// errNotRegular: an ignore or config file that is a symlink (when not
// followed), a FIFO, a device or a directory is not read.
var errNotRegular = errors.New("not a regular file")

// readRegular reads at most MaxFileSize bytes of a regular file. It never
// blocks on a FIFO: the type is checked before opening, and the file is
// opened non-blocking.
func readRegular(name string, follow bool) ([]byte, error) {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", name, errNotRegular)
	}
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(name, flags, 0) //nolint:gosec // reading the named ignore or config file is the point
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", name, errNotRegular)
	}
	return io.ReadAll(io.LimitReader(f, MaxFileSize))
}

// settings are the configuration values the Matcher needs.
type settings struct {
	ignoreCase bool
	// excludes is core.excludesFile as configured ("" when unset), and
	// excludesSet whether it was set at all.
	excludes    string
	excludesSet bool
}

// loadSettings reads core.ignorecase and core.excludesFile from the system,
// global and repository configuration, later files winning.
func loadSettings(env Env, gitDir string, read func(string) ([]byte, error)) settings {
	var files []string
	if env.SystemConfig != "" {
		files = append(files, env.SystemConfig)
	}
	if env.GlobalConfig != "" {
		files = append(files, env.GlobalConfig)
	} else {
		if x := env.xdgConfigHome(); x != "" {
			files = append(files, filepath.Join(x, "git", "config"))
		}
		if env.Home != "" {
			files = append(files, filepath.Join(env.Home, ".gitconfig"))
		}
	}
	if gitDir != "" {
		files = append(files, filepath.Join(commonDir(gitDir, read), "config"))
	}
	var s settings
	for _, name := range files {
		data, err := read(name)
		if err != nil {
			continue
		}
		for _, kv := range parseConfig(data) {
			switch kv.key {
			case "core.ignorecase":
				if b, ok := parseBool(kv.value, kv.noValue); ok {
					s.ignoreCase = b
				}
			case "core.excludesfile":
				s.excludes, s.excludesSet = kv.value, true
			}
		}
	}
	return s
}

// excludesFile is the global excludes file's path, or "" for none.
func (s settings) excludesFile(env Env, root string) string {
	if s.excludesSet {
		return expandPath(s.excludes, env.Home, root)
	}
	if x := env.xdgConfigHome(); x != "" {
		return filepath.Join(x, "git", "ignore")
	}
	return ""
}

// expandPath expands "~/" as git does for path-valued settings; a
// relative path is taken relative to the tree's root.
func expandPath(p, home, root string) string {
	switch {
	case p == "":
		return ""
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, p[1:])
	case strings.HasPrefix(p, "~"):
		return "" // ~user is not supported
	case filepath.IsAbs(p):
		return p
	}
	return filepath.Join(root, p)
}

func parseBool(v string, noValue bool) (bool, bool) {
	if noValue {
		return true, true
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0", "":
		return false, true
	}
	return false, false
}

type configEntry struct {
	// key is "section.name" lower-cased (subsections are kept,
	// "section.sub.name", so they never collide with plain keys).
	key     string
	value   string
	noValue bool
}

// parseConfig parses git's config format well enough for the two keys it
// needs: sections, subsections, comments, quoting, escapes and line
// continuations. include directives are not followed.
func parseConfig(data []byte) []configEntry {
	var out []configEntry
	section := ""
	r := bufio.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	for {
		line, err := r.ReadString('\n')
		if line == "" && err != nil {
			return out
		}
		// Join continuation lines: an unquoted backslash at the end.
		for strings.HasSuffix(strings.TrimRight(line, "\r\n"), "\\") && !endsEscaped(strings.TrimRight(line, "\r\n")) {
			more, err2 := r.ReadString('\n')
			line = strings.TrimRight(line, "\r\n")
			line = line[:len(line)-1] + more
			if err2 != nil {
				break
			}
		}
		s := strings.TrimSpace(line)
		if s == "" || s[0] == '#' || s[0] == ';' {
			continue
		}
		if s[0] == '[' {
			end := strings.IndexByte(s, ']')
			if end < 0 {
				continue
			}
			head := strings.TrimSpace(s[1:end])
			if i := strings.IndexAny(head, " \t"); i >= 0 {
				sub := strings.TrimSpace(head[i:])
				sub = strings.Trim(sub, "\"")
				section = strings.ToLower(head[:i]) + "." + sub
			} else {
				section = strings.ToLower(head)
			}
			s = strings.TrimSpace(s[end+1:])
			if s == "" || s[0] == '#' || s[0] == ';' {
				continue
			}
		}
		name, rest := s, ""
		noValue := true
		if i := strings.IndexByte(s, '='); i >= 0 {
			name, rest, noValue = strings.TrimSpace(s[:i]), s[i+1:], false
		} else if i := strings.IndexAny(s, " \t#;"); i >= 0 {
			name = s[:i]
		}
		if section == "" || name == "" {
			continue
		}
		out = append(out, configEntry{
			key:     section + "." + strings.ToLower(name),
			value:   configValue(rest),
			noValue: noValue,
		})
	}
}

// endsEscaped reports whether s ends in an escaped backslash ("\\\\").
func endsEscaped(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

// configValue unquotes a config value: quotes group, "\" escapes, an
// unquoted "#" or ";" starts a comment, unquoted spaces at the ends go.
func configValue(s string) string {
	var b strings.Builder
	quoted := false
	pendingSpace := ""
	started := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r' || c == '\n':
			continue
		case c == '"':
			quoted = !quoted
			b.WriteString(pendingSpace)
			pendingSpace = ""
			started = true
			continue
		case !quoted && (c == '#' || c == ';'):
			return b.String()
		case !quoted && (c == ' ' || c == '\t'):
			if started {
				pendingSpace += string(c)
			}
			continue
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			default:
				c = s[i]
			}
		}
		b.WriteString(pendingSpace)
		pendingSpace = ""
		b.WriteByte(c)
		started = true
	}
	return b.String()
}

// commonDir is where a linked worktree's shared files (config,
// info/exclude) live: $GIT_DIR/commondir when present, else $GIT_DIR.
func commonDir(gitDir string, read func(string) ([]byte, error)) string {
	data, err := read(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return gitDir
	}
	p := strings.TrimSpace(string(data))
	if p == "" {
		return gitDir
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(gitDir, p)
	}
	return filepath.Clean(p)
}

// Repo is where a directory's repository is.
type Repo struct {
	// WorkTree is the top of the work tree; GitDir its git directory.
	WorkTree, GitDir string
}

// FindRepo looks for the repository that holds dir (an absolute path),
// from dir up to the file system root: a ".git" directory, or a ".git"
// file that points to one ("gitdir: ..."), as in linked worktrees and
// submodules. ok is false outside any repository.
func FindRepo(dir string) (Repo, bool) {
	dir = filepath.Clean(dir)
	for {
		dotGit := filepath.Join(dir, ".git")
		fi, err := os.Stat(dotGit)
		switch {
		case err == nil && fi.IsDir():
			return Repo{WorkTree: dir, GitDir: dotGit}, true
		case err == nil && fi.Mode().IsRegular():
			if data, err := readRegular(dotGit, true); err == nil {
				s := strings.TrimSpace(string(data))
				if p, ok := strings.CutPrefix(s, "gitdir:"); ok {
					p = strings.TrimSpace(p)
					if !filepath.IsAbs(p) {
						p = filepath.Join(dir, p)
					}
					return Repo{WorkTree: dir, GitDir: filepath.Clean(p)}, true
				}
			}
		case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			// An unreadable level: stop looking rather than guess.
			return Repo{}, false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Repo{}, false
		}
		dir = parent
	}
}

// ForDir builds the Matcher for a walk of dir (an absolute path): the
// rules of the repository that holds it, or, outside any repository, with
// dir as the top of the tree.
func ForDir(dir string, env Env) (*Matcher, error) {
	cfg := Config{Root: dir, Env: env}
	if repo, ok := FindRepo(dir); ok {
		cfg.Root, cfg.GitDir = repo.WorkTree, repo.GitDir
	}
	return New(cfg)
}
