// Package ignore decides which files of a tree are ignored, with git's
// semantics exactly, and walks trees without descending into what is
// ignored.
//
// Guarantees:
//
//   - A rule means what it means to git (gitignore(5)): blank lines and
//     "#" comments, "\#" and "\!" escapes, trailing spaces dropped unless
//     escaped, "!" negation, a trailing "/" for directories only, a leading
//     or middle "/" anchoring the rule to its file's directory, "*", "?",
//     "[...]" classes (with "!" or "^" negation and POSIX [:classes:]),
//     and "**" at the start, the middle or the end. core.ignorecase
//     (false by default) folds ASCII case as git does. The tests compare
//     every rule and path with git check-ignore itself.
//   - Sources, highest precedence first: .ignore files (the ripgrep and fd
//     convention, same syntax; any .ignore rule beats any .gitignore rule,
//     as in ripgrep), .gitignore files (a deeper file beats a shallower
//     one), $GIT_DIR/info/exclude, then the global excludes file
//     (core.excludesFile, default $XDG_CONFIG_HOME/git/ignore or
//     ~/.config/git/ignore). Within one file the last matching rule wins.
//   - A path inside an ignored directory is ignored, whatever rules
//     deeper down say: an ignored directory is never read, so neither are
//     the ignore files inside it. Entries named ".git" are always ignored,
//     and so are the temporary files of ferry's writes (vfs.IsTempName):
//     half-written content or a killed writer's leftover, never the user's.
//   - Ignore files are read as git reads them (a UTF-8 byte-order mark is
//     skipped, CRLF is accepted), only when they are regular files (not
//     symlinks, as git does for .gitignore since 2.32), and only their first
//     MaxFileSize bytes.
//   - Speed: rules are compiled once per file; literal rules are found by
//     map lookup, "*.ext" rules by a suffix test, the rest by a
//     bit-parallel automaton with no backtracking and no regexp; a walk
//     reads each directory once and each ignore file once.
//
// Outside a git repository the same rules apply with the walked directory
// as the top of the tree (.gitignore files are honoured there too, and the
// global excludes file), and info/exclude is absent.
package ignore

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// Names of the per-directory ignore files.
const (
	GitignoreName = ".gitignore"
	IgnoreName    = ".ignore"
)

// MaxFileSize is how much of one ignore file is read; rules past it are
// dropped (git has no such bound; a real .gitignore is far smaller).
const MaxFileSize = 8 << 20

// Config says where a Matcher's rules come from.
type Config struct {
	// Root is the absolute path of the top of the tree: the work tree of
	// the repository, or the directory walked when there is none.
	Root string
	// GitDir is the repository's git directory, where info/exclude and
	// config live; "" when the tree is not a repository.
	GitDir string
	// Env locates the user's git configuration; the zero Env reads none.
	Env Env
	// IgnoreCase, when set, overrides core.ignorecase from the
	// configuration.
	IgnoreCase *bool
	// NoGitignore, NoDotIgnore, NoExclude and NoGlobal turn a source off.
	NoGitignore, NoDotIgnore, NoExclude, NoGlobal bool
}

// Matcher holds the rules of one tree. It is safe for concurrent use. It
// is a snapshot: the configuration, info/exclude and the global file are
// read by New, and the ignore files Match and DirAt load are cached; a
// walk reads the ignore files of the directories it lists afresh. Paths
// given to it (Root, walked directories) must be spelled alike, e.g. all
// canonical.
type Matcher struct {
	root     string
	fold     bool
	useGit   bool
	useDot   bool
	base     []*list // info/exclude, then the global file (lowest last)
	readFile func(string) ([]byte, error)
	top      *Dir

	mu    sync.Mutex
	cache map[string]*Dir // Dirs loaded by Match and DirAt, by rel path
}

// New builds the Matcher of a tree: it reads the git configuration,
// info/exclude and the global excludes file, and the root's own ignore
// files. Missing files are not errors.
func New(cfg Config) (*Matcher, error) {
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	env := cfg.Env
	read := env.readFile()
	settings := loadSettings(env, cfg.GitDir, read)
	m := &Matcher{
		root:     root,
		fold:     settings.ignoreCase,
		useGit:   !cfg.NoGitignore,
		useDot:   !cfg.NoDotIgnore,
		readFile: read,
		cache:    make(map[string]*Dir),
	}
	if cfg.IgnoreCase != nil {
		m.fold = *cfg.IgnoreCase
	}
	if !cfg.NoExclude && cfg.GitDir != "" {
		name := filepath.Join(commonDir(cfg.GitDir, read), "info", "exclude")
		if data, err := read(name); err == nil {
			m.base = append(m.base, parseList(data, "", name, m.fold))
		}
	}
	if !cfg.NoGlobal {
		if name := settings.excludesFile(env, root); name != "" {
			if data, err := read(name); err == nil {
				m.base = append(m.base, parseList(data, "", name, m.fold))
			}
		}
	}
	m.top = m.newDir(nil, "", m.loadFiles(""))
	return m, nil
}

// Root is the absolute path of the top of the tree.
func (m *Matcher) Root() string { return m.root }

// IgnoreCase reports whether names are compared ignoring ASCII case.
func (m *Matcher) IgnoreCase() bool { return m.fold }

// Files is the content of one directory's ignore files; nil when absent.
type Files struct {
	Gitignore, Ignore []byte
}

// Dir is the set of rules in force inside one directory: its own ignore
// files and its ancestors'. A Dir is immutable and safe to share.
type Dir struct {
	m *Matcher
	// rel is the directory's path relative to the root ("" at the root).
	rel string
	// dot and git are the .ignore and .gitignore lists in force, deepest
	// first; lists is the whole precedence order (dot, git, m.base).
	dot, git []*list
	lists    []*list
	anchored bool
}

// Top returns the Dir of the root.
func (m *Matcher) Top() *Dir { return m.top }

func (m *Matcher) newDir(parent *Dir, rel string, f Files) *Dir {
	d := &Dir{m: m, rel: rel}
	if parent != nil {
		d.dot, d.git = parent.dot, parent.git
	}
	base := ""
	if rel != "" {
		base = rel + "/"
	}
	own := false
	if m.useDot && f.Ignore != nil {
		l := parseList(f.Ignore, base, base+IgnoreName, m.fold)
		d.dot = append([]*list{l}, d.dot...)
		own = true
	}
	if m.useGit && f.Gitignore != nil {
		l := parseList(f.Gitignore, base, base+GitignoreName, m.fold)
		d.git = append([]*list{l}, d.git...)
		own = true
	}
	if !own && parent != nil {
		d.lists, d.anchored = parent.lists, parent.anchored
		return d
	}
	d.lists = make([]*list, 0, len(d.dot)+len(d.git)+len(m.base))
	d.lists = append(append(append(d.lists, d.dot...), d.git...), m.base...)
	for _, l := range d.lists {
		d.anchored = d.anchored || l.anchored
	}
	return d
}

// Rel is the directory's path relative to the root, "/"-separated ("" at
// the root).
func (d *Dir) Rel() string { return d.rel }

// Enter returns the rules in force inside d's subdirectory name, whose
// own ignore files hold f. It does not check whether name is ignored.
func (d *Dir) Enter(name string, f Files) *Dir {
	return d.m.newDir(d, joinRel(d.rel, name), f)
}

// Match reports whether the entry name directly inside d is ignored.
// isDir tells whether it is a directory (a symlink is not, as for git).
func (d *Dir) Match(name string, isDir bool) bool {
	ignored, _ := d.Why(name, isDir)
	return ignored
}

// Why is Match that also returns the deciding rule (nil when no rule
// matched, or for ".git" and ferry's temporary files).
func (d *Dir) Why(name string, isDir bool) (bool, *Rule) {
	nameF := name
	if d.m.fold {
		nameF = asciiLower(name)
	}
	if nameF == ".git" || !isDir && vfs.IsTempName(name) {
		return true, nil
	}
	var full, fullF string
	if d.anchored {
		full = joinRel(d.rel, name)
		fullF = full
		if d.m.fold {
			fullF = asciiLower(full)
		}
	}
	for _, l := range d.lists {
		var rel, relF string
		if l.anchored {
			rel, relF = full[len(l.base):], fullF[len(l.base):]
		}
		if i := l.match(rel, relF, name, nameF, isDir); i >= 0 {
			p := &l.pats[i]
			return !p.Negative, &Rule{Source: l.source, Pattern: p}
		}
	}
	return false, nil
}

// Rule is a matching rule and the file it comes from.
type Rule struct {
	// Source is the file: root-relative for .gitignore and .ignore files,
	// absolute for info/exclude and the global file.
	Source  string
	Pattern *Pattern
}

// DirAt returns the Dir of the directory rel (root-relative,
// "/"-separated), reading the ignore files of it and of its ancestors
// from disk. It does not check whether rel or its ancestors are ignored:
// a walk started below the root searches where it is asked to, with the
// rules its ancestors impose on what is inside.
func (m *Matcher) DirAt(rel string) *Dir {
	rel = cleanRel(rel)
	if rel == "" {
		return m.top
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dirAtLocked(rel)
}

func (m *Matcher) dirAtLocked(rel string) *Dir {
	if rel == "" {
		return m.top
	}
	if d, ok := m.cache[rel]; ok {
		return d
	}
	parentRel, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parentRel, name = rel[:i], rel[i+1:]
	}
	d := m.dirAtLocked(parentRel).Enter(name, m.loadFiles(rel))
	m.cache[rel] = d
	return d
}

// Match reports whether the root-relative path rel is ignored, as git
// check-ignore does: it is ignored when a rule matches it, or when one of
// its parent directories is ignored.
func (m *Matcher) Match(rel string, isDir bool) bool {
	rel = cleanRel(rel)
	if rel == "" {
		return false
	}
	parts := strings.Split(rel, "/")
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.top
	for i, name := range parts[:len(parts)-1] {
		if d.Match(name, true) {
			return true
		}
		d = m.dirAtLocked(strings.Join(parts[:i+1], "/"))
	}
	return d.Match(parts[len(parts)-1], isDir)
}

// loadFiles reads the ignore files of the root-relative directory rel.
func (m *Matcher) loadFiles(rel string) Files {
	dir := filepath.Join(m.root, filepath.FromSlash(rel))
	var f Files
	if m.useGit {
		f.Gitignore, _ = readRegular(filepath.Join(dir, GitignoreName), false)
	}
	if m.useDot {
		f.Ignore, _ = readRegular(filepath.Join(dir, IgnoreName), false)
	}
	return f
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func cleanRel(rel string) string {
	rel = filepath.ToSlash(rel)
	rel = strings.Trim(rel, "/")
	if rel == "." {
		return ""
	}
	return rel
}
