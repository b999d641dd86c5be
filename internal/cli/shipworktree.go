package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/ferry-dev/ferry/internal/worktree"
)

// codeUnshipped refuses to remove a worktree whose changes its base has
// not (the protocol's code of the same name).
const codeUnshipped = "unshipped_changes"

// worktreeListed is one worktree of ferry worktree list.
type worktreeListed struct {
	Name    string `json:"name"`
	Branch  string `json:"branch"`
	Base    string `json:"base"`
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Files   int    `json:"files"`
	Ahead   int    `json:"ahead"`
	Behind  int    `json:"behind"`
	// Uncommitted and Unshipped as in the protocol's Worktree.
	Uncommitted bool `json:"uncommitted"`
	Unshipped   bool `json:"unshipped"`
	Missing     bool `json:"missing"`
	// Error says why the counts could not be read (a base gone, …).
	Error string `json:"error,omitempty"`
}

// runWorktree is `ferry worktree list|remove|prune`.
func runWorktree(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry worktree", flag.ContinueOnError)
	workspace := fs.String("workspace", ".", "a folder of the repository `DIR` whose worktrees to manage")
	state := fs.String("state", "", stateUsageWorktrees)
	format := fs.String("output-format", formatText, "for list: `FORMAT` text (a table) or json (an array)")
	deleteBranch := fs.Bool("delete-branch", false, "for remove: delete the branch ferry/NAME too (default: it stays)")
	force := fs.Bool("force", false, "for remove: remove a worktree with unshipped changes (uncommitted, or commits its base has not)")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry worktree list [--workspace DIR] [--state DIR] [--output-format text|json]",
		"       ferry worktree remove [--workspace DIR] [--state DIR] [--delete-branch] [--force] NAME",
		"       ferry worktree prune [--workspace DIR] [--state DIR]",
		"\nManages the git worktrees of the repository of --workspace that ferry run",
		"--worktree made (or, with --state, a client's isolated sessions').",
		"\nlist: name, branch, base, +added −removed against the base, ↑ahead ↓behind",
		"the base, and whether it has unshipped changes or its folder is missing.",
		"remove: removes the worktree's folder; its branch stays unless",
		"--delete-branch. A worktree with unshipped changes is refused",
		"(unshipped_changes) unless --force. prune: forgets worktrees whose folder",
		"was removed by hand (their branches stay).",
		"\nExit codes: 0 done, 1 refused or failed, 2 bad usage.",
	); !ok {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("ferry worktree: say list, remove or prune")
	}
	verb, rest := fs.Arg(0), fs.Args()[1:]
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch verb {
	case "list", "prune":
		if len(rest) > 0 {
			return usageErrorf("ferry worktree %s: unexpected argument %q", verb, rest[0])
		}
		if set["delete-branch"] || set["force"] {
			return usageErrorf("ferry worktree %s: --delete-branch and --force only apply to remove", verb)
		}
	case "remove":
		if len(rest) != 1 {
			return usageErrorf("ferry worktree remove: give one worktree NAME (ferry worktree list lists them)")
		}
		if !worktree.ValidName(rest[0]) {
			return usageErrorf("ferry worktree remove: worktree name %q: use lower case letters, digits and '-', at most %d", rest[0], worktree.MaxName)
		}
	default:
		return usageErrorf("ferry worktree: unknown verb %q: say list, remove or prune", verb)
	}
	if set["output-format"] && verb != "list" {
		return usageErrorf("ferry worktree %s: --output-format only applies to list", verb)
	}
	if *format != formatText && *format != formatJSON {
		return usageErrorf("ferry worktree list: --output-format must be text or json, not %q", *format)
	}
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	fail := func(err error) error { return fmt.Errorf("ferry worktree %s: %w", verb, err) }

	if verb == "remove" {
		name := rest[0]
		// A folder removed by hand is forgotten (its branch as asked).
		wt, err := findWorktree(ctx, getenv, *workspace, *state, name)
		if err != nil && (wt == nil || !worktree.HasCode(err, worktree.CodeMissing)) {
			return fail(err)
		}
		if !*force {
			unshipped, err := wt.HasUnshipped(ctx)
			if err != nil {
				return fail(err)
			}
			if unshipped {
				return fail(&worktree.Error{Code: codeUnshipped,
					Message: fmt.Sprintf("%s has changes its base %s has not (ferry ship %s ships them): pass --force to remove it anyway", wt.Branch, wt.Base, name)})
			}
		}
		if err := wt.Remove(ctx, !*deleteBranch); err != nil {
			return fail(err)
		}
		kept := "its branch " + wt.Branch + " stays"
		if *deleteBranch {
			kept = "branch " + wt.Branch + " deleted"
		}
		fmt.Fprintf(env.Stdout, "removed worktree %s (%s); %s\n", name, wt.Path, kept)
		return nil
	}

	repo, err := worktree.Open(ctx, *workspace)
	if err != nil {
		return fail(err)
	}
	root, err := worktreesRoot(getenv, *state)
	if err != nil {
		return fail(fmt.Errorf("%w; pass --state", err))
	}
	if verb == "prune" {
		gone, err := repo.Prune(ctx, root)
		if err != nil {
			return fail(err)
		}
		for _, n := range gone {
			fmt.Fprintf(env.Stdout, "pruned %s\n", n)
		}
		return nil
	}
	list, err := repo.List(ctx, root)
	if err != nil {
		return fail(err)
	}
	rows := make([]worktreeListed, 0, len(list))
	for _, wt := range list {
		row := worktreeListed{Name: wt.Name, Branch: wt.Branch, Base: wt.Base, Path: wt.Path, Missing: wt.Missing}
		if !wt.Missing {
			c, err := wt.Counts(ctx)
			if err == nil {
				row.Added, row.Removed, row.Files, row.Ahead, row.Behind, row.Uncommitted = c.Added, c.Deleted, c.Files, c.Ahead, c.Behind, c.Uncommitted
				row.Unshipped = c.Uncommitted || c.Ahead > 0
			} else {
				var we *worktree.Error
				row.Error = err.Error()
				if errors.As(err, &we) {
					row.Error = we.Message + " [" + we.Code + "]"
				}
			}
		} else if u, err := wt.HasUnshipped(ctx); err == nil {
			row.Unshipped = u
		}
		rows = append(rows, row)
	}
	if *format == formatJSON {
		b, _ := json.Marshal(rows)
		_, _ = env.Stdout.Write(append(b, '\n'))
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintf(env.Stdout, "no worktree of %s under %s\n", repo.Top, root)
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBRANCH\tBASE\tCHANGES\tAHEAD/BEHIND\tSTATE")
	for _, r := range rows {
		st := "shipped"
		switch {
		case r.Missing:
			st = "missing (ferry worktree prune)"
		case r.Error != "":
			st = r.Error
		case r.Uncommitted:
			st = "uncommitted changes"
		case r.Unshipped:
			st = "unshipped"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t+%d −%d (%d files)\t↑%d ↓%d\t%s\n", r.Name, r.Branch, r.Base, r.Added, r.Removed, r.Files, r.Ahead, r.Behind, st)
	}
	return tw.Flush()
}
