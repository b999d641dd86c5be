package permission

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// This file parses a git command line the way git's parse-options does, so
// that review mode can tell exactly which options a command carries. What
// it guarantees: a command is accepted only if every option in it is on
// its subcommand's allow-list; an option that is unknown, abbreviated or
// negated in a way the list does not name is refused, so an option the
// list does not know about can never slip through as a value or a
// positional argument.
//
// Why the care: `-nO'cmd'` is `-n -O cmd` to git (a short option that
// takes a value swallows the rest of its bundle), `--upload-p=x` is
// `--upload-pack=x` (git accepts unambiguous abbreviations), and
// `--cont /etc/passwd` is `--contents /etc/passwd`. A parser that only
// looks for the dangerous spellings misses all three.

// valKind is whether an option takes a value.
type valKind uint8

const (
	// noVal: a flag. In a bundle the next character is another option.
	noVal valKind = iota
	// reqVal: `--o=v`, `--o v`, `-ov`, `-o v`. In a bundle the rest of
	// the bundle is the value.
	reqVal
	// optVal: `--o=v` and `-ov` only; the next word is never the value.
	optVal
)

// gitSub is one read-only subcommand (or subcommand word: "stash show").
type gitSub struct {
	// opts maps "-n" and "--name" to how the option takes a value.
	opts map[string]valKind
	// numeric: `-<digits>` is an option (log -5, grep -3).
	numeric bool
	// check, when set, refuses forms the options alone do not show
	// (`git branch x` creates a branch); "" when fine.
	check func(g *gitArgs) string
}

// gitArgs is a parsed subcommand line.
type gitArgs struct {
	// opts are the options given, by the name in gitSub.opts.
	opts []string
	// values are the options' values, in order, for checks that look at
	// them (formats).
	values map[string][]string
	// pos are the positional arguments before `--`, paths those after.
	pos, paths []string
}

func (g *gitArgs) has(names ...string) bool {
	for _, n := range names {
		if slices.Contains(g.opts, n) {
			return true
		}
	}
	return false
}

// refusedGitOptions are options known to run programs, write files or read
// outside the repository, with the reason; they name the danger when a
// command spells one, in full or abbreviated. They are refused because no
// allow-list holds them, not because they are listed here.
var refusedGitOptions = map[string]string{
	"--output":                "writes a file",
	"--output-directory":      "writes files",
	"--no-index":              "compares files outside the repository",
	"--contents":              "reads a file outside the repository",
	"--ignore-revs-file":      "reads a file outside the repository",
	"--exclude-from":          "reads a file outside the repository",
	"--file":                  "reads a file outside the repository",
	"--blob":                  "reads configuration from outside the working tree",
	"--orderfile":             "reads a file outside the repository",
	"--open-files-in-pager":   "starts a program",
	"--upload-pack":           "starts a program",
	"--receive-pack":          "starts a program",
	"--exec":                  "starts a program",
	"--ext-diff":              "runs an external diff program",
	"--textconv":              "runs textconv filter programs",
	"--filters":               "runs filter programs",
	"--show-signature":        "runs gpg",
	"--verify":                "runs gpg for tags",
	"--recurse-submodules":    "runs git in submodules, whose configuration review mode does not read",
	"--remerge-diff":          "runs merge drivers",
	"--edit":                  "starts an editor",
	"--edit-description":      "starts an editor",
	"--set-upstream-to":       "changes the configuration",
	"--unset-upstream":        "changes the configuration",
	"--delete":                "deletes",
	"--move":                  "renames",
	"--copy":                  "copies",
	"--force":                 "changes refs",
	"--create-reflog":         "writes a reflog",
	"--track":                 "changes the configuration",
	"--annotate":              "creates a tag",
	"--sign":                  "runs gpg",
	"--local-user":            "runs gpg",
	"--message":               "creates an object",
	"--add":                   "changes the configuration",
	"--unset":                 "changes the configuration",
	"--unset-all":             "changes the configuration",
	"--replace-all":           "changes the configuration",
	"--rename-section":        "changes the configuration",
	"--remove-section":        "changes the configuration",
	"--batch":                 "reads object names from standard input",
	"--stdin":                 "reads from standard input",
	"--exclude-per-directory": "reads files review mode does not check",
}

// Option-set building: "-n" and "--name" are flags, "-e=" and "--format="
// take a value, "-u=?" and "--color=?" an optional one (attached only).
func optSet(specs ...string) map[string]valKind {
	m := map[string]valKind{}
	for _, list := range specs {
		for _, s := range strings.Fields(list) {
			switch {
			case strings.HasSuffix(s, "=?"):
				m[strings.TrimSuffix(s, "=?")] = optVal
			case strings.HasSuffix(s, "="):
				m[strings.TrimSuffix(s, "=")] = reqVal
			default:
				m[s] = noVal
			}
		}
	}
	return m
}

// Diff options (git diff, show, log -p, stash show): output forms,
// whitespace, rename detection, pickaxe. Not --output, --ext-diff,
// --textconv, -O (order file), --no-index, --submodule.
const diffOpts = `-p -u --patch -s --no-patch --raw --patch-with-raw --patch-with-stat
--compact-summary --numstat --shortstat --cumulative --summary -z --name-only --name-status
--no-color --no-color-moved --no-renames --irreversible-delete -D -R -a --text
--ignore-space-at-eol -b --ignore-space-change -w --ignore-all-space --ignore-blank-lines
--ignore-cr-at-eol -W --function-context --no-ext-diff --no-textconv --no-prefix
--default-prefix --full-index --binary --minimal --patience --histogram --pickaxe-all
--pickaxe-regex --exit-code --quiet --check --indent-heuristic --no-indent-heuristic
--no-relative --find-copies-harder --ita-invisible-in-index --ita-visible-in-index --no-stat
--stat=? --dirstat=? --dirstat-by-file=? --color=? --color-moved=? --color-words=?
--word-diff=? --find-renames=? -M=? --find-copies=? -C=? -B=? --break-rewrites=?
--relative=? --abbrev=? --ignore-submodules=? -U=? --unified=?
--word-diff-regex= --diff-filter= --src-prefix= --dst-prefix= --line-prefix=
--inter-hunk-context= --diff-algorithm= --anchored= --stat-width= --stat-name-width=
--stat-count= --stat-graph-width= -S= -G= --find-object= --color-moved-ws=
--ws-error-highlight= -l= --rotate-to= --skip-to=`

// Revision options (log, rev-list, shortlog, show, stash list, reflog).
// Not --show-signature (gpg), --stdin, --alternate-refs, --diff-merges
// (remerge runs merge drivers).
const revOpts = `--oneline --all --reflog --graph --first-parent --no-merges --merges --reverse
--topo-order --date-order --author-date-order --left-right --left-only --right-only
--cherry-pick --cherry-mark --cherry --source --parents --children --boundary
--simplify-by-decoration --full-history --simplify-merges --show-pulls --sparse --dense
--not --all-match --invert-grep -i --regexp-ignore-case -E --extended-regexp -F
--fixed-strings -P --perl-regexp --basic-regexp --remove-empty --follow --no-follow
--log-size --abbrev-commit --no-abbrev-commit --relative-date --mailmap --use-mailmap
--no-mailmap --no-use-mailmap --no-decorate --clear-decorations --no-notes --no-expand-tabs
--count --objects --objects-edge --in-commit-order --do-walk -g --walk-reflogs
--single-worktree --ignore-missing --no-min-parents --no-max-parents
--exclude-first-parent-only --no-show-signature -c --cc -m --combined-all-paths
--no-diff-merges --timestamp --header --no-commit-id
--decorate=? --pretty=? --branches=? --tags=? --remotes=? --notes=? --expand-tabs=?
--ancestry-path=? --no-walk=? --show-linear-break=?
--format= --author= --committer= --grep= --grep-reflog= --since= --after= --until=
--before= --max-count= -n= --skip= --date= --decorate-refs= --decorate-refs-exclude=
--encoding= --exclude= --glob= --min-parents= --max-parents= --default= -L=
--since-as-filter=`

// Options of `git branch` and `git tag` when they list.
const refListOpts = `--no-color --no-column -i --ignore-case --color=? --column=?
--contains= --no-contains= --merged= --no-merged= --points-at= --sort= --format=`

// gitSubs is built at its first use, not at every ferry start (issue 37).
var gitSubs = sync.OnceValue(func() map[string]*gitSub {
	return map[string]*gitSub{
		"status": {opts: optSet(`-s --short -b --branch --show-stash --long -v --verbose -z
		--no-column --ahead-behind --no-ahead-behind --renames --no-renames
		--porcelain=? -u=? --untracked-files=? --ignore-submodules=? --ignored=? --column=?
		--find-renames=?`)},
		"diff": {opts: optSet(diffOpts, `--cached --staged --merge-base -1 -2 -3 --base --ours --theirs`)},
		"log":  {opts: optSet(diffOpts, revOpts), numeric: true},
		"show": {opts: optSet(diffOpts, revOpts), numeric: true},
		"blame": {opts: optSet(`-b --root --show-stats -f --show-name -n --show-number -s -e
		--show-email -w -l -t -p --porcelain --line-porcelain --incremental -c --score-debug
		--first-parent --progress --no-progress --color-lines --color-by-age --minimal --reverse
		--no-textconv --abbrev=? -M=? -C=? -L= --date= --ignore-rev= --encoding=`)},
		"grep": {opts: optSet(`-n --line-number --column -i --ignore-case -I -w --word-regexp -v
		--invert-match -h -H --full-name -E --extended-regexp -G --basic-regexp -F
		--fixed-strings -P --perl-regexp -r --recursive --no-recursive -l --files-with-matches
		--name-only -L --files-without-match -c --count -o --only-matching -z --null -q --quiet
		--break --heading -p --show-function -W --function-context --and --or --not
		--all-match --untracked --cached --exclude-standard --no-exclude-standard -a --text
		--no-textconv --no-color --color=? --max-depth= -e= -A= --after-context= -B=
		--before-context= -C= --context= -m= --max-count= --threads=`), numeric: true},
		"ls-files": {opts: optSet(`-c --cached -d --deleted -m --modified -o --others -i --ignored
		-s --stage --directory --no-empty-directory -u --unmerged -k --killed -z -t -v -f
		--full-name --exclude-standard --error-unmatch --debug --eol --deduplicate --sparse
		--abbrev=? -x= --exclude= --format= --with-tree=`)},
		"ls-tree": {opts: optSet(`-d -r -t -l --long -z --name-only --name-status --object-only
		--full-name --full-tree --abbrev=? --format=`)},
		"rev-parse": {opts: optSet(`--verify -q --quiet --show-toplevel --show-prefix --show-cdup
		--git-dir --absolute-git-dir --git-common-dir --is-inside-work-tree
		--is-inside-git-dir --is-bare-repository --is-shallow-repository --symbolic
		--symbolic-full-name --all --show-superproject-working-tree --sq --revs-only
		--no-revs --flags --no-flags --not --show-object-format --abbrev-ref=? --short=?
		--branches=? --tags=? --remotes=? --default=`)},
		"rev-list": {opts: optSet(revOpts), numeric: true},
		"cat-file": {opts: optSet(`-t -s -e -p --mailmap --use-mailmap --no-mailmap`)},
		"describe": {opts: optSet(`--tags --all --long --always --exact-match --first-parent
		--contains --abbrev=? --dirty=? --broken=? --candidates= --match= --exclude=`)},
		"shortlog": {opts: shortlogOpts(), numeric: true},
		"branch": {opts: optSet(refListOpts, `-a --all -r --remotes -v --verbose -l --list
		--show-current --abbrev=? --no-abbrev`), check: listOnly("git branch creates, renames and deletes branches")},
		"tag":        {opts: optSet(refListOpts, `-l --list -n=?`), check: listOnly("git tag creates and deletes tags")},
		"merge-base": {opts: optSet(`--all --octopus --independent --is-ancestor --fork-point`)},
		"show-ref":   {opts: optSet(`--head --tags --heads --verify -s -d --dereference -q --quiet --hash=? --abbrev=?`)},
		"for-each-ref": {opts: optSet(`--ignore-case --shell --perl --python --tcl --format= --sort=
		--count= --points-at= --merged= --no-merged= --contains= --no-contains=`)},
		"name-rev": {opts: optSet(`--tags --all --name-only --no-undefined --always --refs= --exclude=`)},
		"version":  {opts: optSet(`--build-options`)},
		"config": {opts: optSet(`--get --get-all --get-regexp --get-urlmatch -l --list --show-origin
		--show-scope --name-only -z --null --includes --no-includes --local --global --system
		--worktree --bool --int --bool-or-int --path --expiry-date --type= --default=`),
			check: checkGitConfig},
		// Subcommand words: `git stash show` parses as "stash show".
		"stash list":     {opts: optSet(revOpts, diffOpts), numeric: true},
		"stash show":     {opts: optSet(diffOpts, `--include-untracked --only-untracked`)},
		"reflog show":    {opts: optSet(revOpts, diffOpts), numeric: true},
		"reflog exists":  {opts: optSet(``)},
		"remote":         {opts: optSet(`-v --verbose`), check: noPositional("git remote lists remotes only with no arguments")},
		"remote get-url": {opts: optSet(`--push --all`)},
		"remote show":    {opts: optSet(`-n`), check: remoteShowOffline},
		"worktree list":  {opts: optSet(`--porcelain -v --verbose -z --expire=`)},
	}
})

// shortlogOpts are revision options, with shortlog's own taking precedence
// (its -n is --numbered, not a count).
func shortlogOpts() map[string]valKind {
	m := optSet(revOpts)
	for k, v := range optSet(`-n --numbered -s --summary -e --email -c --committer --group= -w=?`) {
		m[k] = v
	}
	return m
}

// gitSubWords are subcommands dispatched on their first word; "" is the
// form with no word (when allowed), and a word not listed is refused,
// except for reflog, whose unknown first word is a ref to show.
var gitSubWords = map[string][]string{
	"stash":    {"list", "show"},
	"reflog":   {"", "show", "exists"},
	"remote":   {"", "get-url", "show"},
	"worktree": {"list"},
}

// GitReadOnlyCommands lists the git subcommands review mode runs, sorted:
// branch, tag, config, remote, stash, reflog and worktree only in their
// listing and reading forms.
func GitReadOnlyCommands() []string {
	seen := map[string]bool{}
	for k := range gitSubs() {
		k, _, _ = strings.Cut(k, " ")
		seen[k] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkGitArgs checks the words after `git`: global options, the
// subcommand and its arguments. "" when the command only reads.
func checkGitArgs(args []string) string {
	i := 0
	for i < len(args) && slices.Contains([]string{"--no-pager", "-P", "--no-optional-locks"}, args[i]) {
		i++
	}
	if i == len(args) {
		return "git needs a subcommand"
	}
	sub := args[i]
	if strings.HasPrefix(sub, "-") {
		return fmt.Sprintf("the global git option %s is refused (it can change what git runs or reaches)", sub)
	}
	rest := args[i+1:]
	name := sub
	if words, ok := gitSubWords[sub]; ok {
		w := ""
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			w = rest[0]
		}
		switch {
		case w != "" && slices.Contains(words, w):
			name, rest = sub+" "+w, rest[1:]
		case sub == "reflog" && !slices.Contains([]string{"expire", "delete", "drop"}, w):
			name = "reflog show" // git reflog [ref]: a ref to show
		case w == "" && slices.Contains(words, ""):
		default:
			forms := make([]string, 0, len(words))
			for _, f := range words {
				forms = append(forms, strings.TrimSpace("git "+sub+" "+f))
			}
			return fmt.Sprintf("git %s can change the repository; review mode runs only %s", strings.TrimSpace(sub+" "+w), strings.Join(forms, ", "))
		}
	}
	spec, ok := gitSubs()[name]
	if !ok {
		return fmt.Sprintf("git %s is not a read-only git command", sub)
	}
	g, why := parseGitArgs(name, spec, rest)
	if why != "" {
		return why
	}
	for _, v := range append(g.values["--format"], g.values["--pretty"]...) {
		if strings.Contains(v, "%G") || strings.Contains(v, "%(signature") {
			return fmt.Sprintf("git %s: the format %q verifies signatures, which runs gpg", name, v)
		}
	}
	if spec.check != nil {
		return spec.check(g)
	}
	return ""
}

// parseGitArgs parses args the way git's parse-options does, against
// spec's allow-list. why names the first option that is not allowed.
func parseGitArgs(name string, spec *gitSub, args []string) (g *gitArgs, why string) {
	g = &gitArgs{values: map[string][]string{}}
	refuse := func(opt, what string) string {
		return fmt.Sprintf("git %s: %s %s", name, opt, what)
	}
	// sepValue takes the next word as opt's value. A value that looks like
	// an option or a path outside the repository is refused: git may parse
	// that word differently (as an option, or a path) than this table says.
	sepValue := func(opt string, i *int) string {
		if *i+1 >= len(args) {
			return "" // git complains that the value is missing
		}
		*i++
		v := args[*i]
		if strings.HasPrefix(v, "-") {
			return refuse(opt, fmt.Sprintf("has the value %q, which starts with -: attach it (%s=%s)", v, opt, v))
		}
		if why := positionalPath(v); why != "" {
			return refuse(opt, "value "+why)
		}
		g.values[opt] = append(g.values[opt], v)
		return ""
	}
	endOfOpts := false
	for i := 0; i < len(args); i++ { //nolint:intrange // sepValue advances i past a separate value
		a := args[i]
		switch {
		case a == "--":
			for _, p := range args[i+1:] {
				if why := positionalPath(p); why != "" {
					return nil, fmt.Sprintf("git %s: %s", name, why)
				}
			}
			g.paths = append(g.paths, args[i+1:]...)
			return g, ""
		case endOfOpts || a == "-" || !strings.HasPrefix(a, "-"):
			if why := positionalPath(a); why != "" {
				return nil, fmt.Sprintf("git %s: %s", name, why)
			}
			g.pos = append(g.pos, a)
		case a == "--end-of-options":
			endOfOpts = true
		case strings.HasPrefix(a, "--"):
			opt, val, hasVal := strings.Cut(a, "=")
			kind, known := spec.opts[opt]
			if !known {
				if base, ok := strings.CutPrefix(opt, "--no-"); ok {
					// parse-options accepts --no-X for an option X; a
					// negation takes no value.
					if k, ok := spec.opts["--"+base]; ok && k != reqVal && !hasVal {
						g.opts = append(g.opts, opt)
						continue
					}
				}
				return nil, refuse(opt, unknownLong(opt))
			}
			g.opts = append(g.opts, opt)
			switch {
			case kind == noVal && hasVal:
				return nil, refuse(opt, "takes no value")
			case hasVal:
				g.values[opt] = append(g.values[opt], val)
			case kind == reqVal:
				if why := sepValue(opt, &i); why != "" {
					return nil, why
				}
			}
		case spec.numeric && isDigits(a[1:]):
			g.opts = append(g.opts, "-<n>")
		default:
			// A bundle of short options: each letter an option, until one
			// that takes a value swallows the rest.
			for j := 1; j < len(a); j++ {
				opt := "-" + a[j:j+1]
				kind, known := spec.opts[opt]
				if !known {
					return nil, refuse(opt, unknownShort(a, j))
				}
				g.opts = append(g.opts, opt)
				if kind == noVal {
					continue
				}
				if rest := a[j+1:]; rest != "" {
					g.values[opt] = append(g.values[opt], rest)
				} else if kind == reqVal {
					if why := sepValue(opt, &i); why != "" {
						return nil, why
					}
				}
				break
			}
		}
	}
	return g, ""
}

func unknownLong(opt string) string {
	if why, ok := refusedGitOptions[opt]; ok {
		return why
	}
	// git resolves an unambiguous prefix to the option it abbreviates.
	var hits []string
	for full := range refusedGitOptions {
		if len(opt) > 3 && strings.HasPrefix(full, opt) {
			hits = append(hits, full)
		}
	}
	if len(hits) > 0 {
		slices.Sort(hits)
		return fmt.Sprintf("abbreviates %s, which %s", hits[0], refusedGitOptions[hits[0]])
	}
	return "is not an option review mode knows to be read-only (abbreviations are refused; spell options in full)"
}

func unknownShort(bundle string, j int) string {
	c := bundle[j]
	where := ""
	if len(bundle) > 2 {
		where = fmt.Sprintf(" (in %s)", bundle)
	}
	switch c {
	case 'O':
		return "starts a program or reads a file outside the repository" + where
	case 'S', 'X', 'f':
		return "may read a file outside the repository" + where
	}
	return "is not an option review mode knows to be read-only" + where
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// positionalPath refuses an argument that names a path outside the
// repository: git diff with such a path compares files outside it (the
// implicit --no-index), and other commands would read them. Revisions
// (`a..b`, `HEAD~2`, `:/msg`) pass.
func positionalPath(a string) string {
	if strings.HasPrefix(a, "/") || strings.HasPrefix(a, "~") {
		return fmt.Sprintf("%s is a path outside the repository", a)
	}
	for _, part := range strings.Split(a, "/") {
		if part == ".." || strings.HasSuffix(part, ")..") {
			return fmt.Sprintf("%s leads out of the working directory", a)
		}
	}
	return ""
}

// listOnly allows branch and tag in their listing forms: a name is a
// pattern only with -l/--list.
func listOnly(what string) func(g *gitArgs) string {
	return func(g *gitArgs) string {
		if len(g.pos) > 0 && !g.has("-l", "--list") {
			return what + "; only listing is allowed (add --list to list matching names)"
		}
		if len(g.paths) > 0 {
			return what + "; only listing is allowed"
		}
		return ""
	}
}

func noPositional(what string) func(g *gitArgs) string {
	return func(g *gitArgs) string {
		if len(g.pos)+len(g.paths) > 0 {
			return what
		}
		return ""
	}
}

// remoteShowOffline: without -n, git remote show contacts the remote.
func remoteShowOffline(g *gitArgs) string {
	if !g.has("-n") {
		return "git remote show contacts the remote through transports the repository configures; review mode runs only git remote show -n NAME"
	}
	return ""
}

// checkGitConfig allows git config only with one reading action.
func checkGitConfig(g *gitArgs) string {
	if g.has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list") {
		return ""
	}
	if len(g.pos) > 0 && (g.pos[0] == "get" || g.pos[0] == "list") {
		return "" // git 2.46's `git config get` and `git config list`
	}
	return "git config without --get or --list can change the configuration"
}
