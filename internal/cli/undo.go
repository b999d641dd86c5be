package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// This file is ferry run's file history and `ferry undo`, which restores
// what a run (or a UI session, whose journal has the same layout in the
// client's state folder) changed: all of it, one file, or only lists it.
// The journal (filehistory.Journal) does the work: all or nothing, refused
// with the file's name when one changed since the agent's edit (or is now
// a symbolic link, or another file), writes through the vfs confined to
// the workspace.

// runHistory is the journal of one ferry run.
type runHistory struct {
	j       *filehistory.Journal
	dir     string
	session string
}

// openRunHistory opens the run's journal in ferry's state folder
// ($XDG_STATE_HOME/ferry/history/<session>).
func openRunHistory(getenv func(string) string, session, root string, quota int64) (*runHistory, error) {
	state, err := filehistory.DefaultStateDir(getenv)
	if err != nil {
		return nil, err
	}
	dir, err := filehistory.SessionDir(state, session)
	if err != nil {
		return nil, err
	}
	// The canonical workspace, as the tools name files (for the journal's
	// relative paths).
	fsys, err := vfs.NewLocal(root)
	if err != nil {
		return nil, fmt.Errorf("file history: %w", err)
	}
	canon := fsys.Roots()[0]
	_ = fsys.Close()
	j, err := filehistory.OpenJournal(dir, session, canon, quota)
	if err != nil {
		return nil, err
	}
	return &runHistory{j: j, dir: dir, session: session}, nil
}

// history is the journal as the adapters take it (nil: none).
func (h *runHistory) history() adapter.History {
	if h == nil {
		return nil
	}
	return h.j
}

// finish closes the journal and tells the user how to undo the run; a run
// that changed nothing leaves no history behind.
func (h *runHistory) finish(stderr io.Writer) {
	files := map[string]bool{}
	for _, e := range h.j.Entries() {
		files[e.Rel] = true
	}
	dropped := h.j.Dropped()
	if err := h.j.Close(); err != nil {
		fmt.Fprintf(stderr, "ferry run: file history: %v\n", err)
	}
	if len(files) == 0 && !dropped {
		_ = os.RemoveAll(h.dir)
		return
	}
	what := "1 file changed"
	if len(files) != 1 {
		what = fmt.Sprintf("%d files changed", len(files))
	}
	switch {
	case dropped && len(files) == 0:
		fmt.Fprintf(stderr, "ferry run: files changed, but --history-quota dropped every change: the run cannot be undone\n")
		return
	case dropped:
		fmt.Fprintf(stderr, "ferry run: %s; --history-quota dropped the oldest changes, so only some can be undone: ferry undo --list %s\n", what, h.session)
		return
	}
	fmt.Fprintf(stderr, "ferry run: %s; undo with: ferry undo %s\n", what, h.session)
}

// runUndo is `ferry undo`.
func runUndo(_ context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry undo", flag.ContinueOnError)
	workspace := fs.String("workspace", "", "the workspace `DIR` the session changed (default: the one its history names)")
	stateFlag := fs.String("state", "", "the state `DIR` whose history/ holds the session's journal (default $XDG_STATE_HOME/ferry, where ferry run keeps it; "+
		"for a UI session, the client's: $XDG_STATE_HOME/ferry/client)")
	list := fs.Bool("list", false, "list the files the session changed (path, edits, changed since); change nothing")
	file := fs.String("file", "", "undo only the session's changes to `PATH` (relative to the workspace)")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry undo [--workspace DIR] [--state DIR] [--list] [--file PATH] SESSION_ID",
		"\nPuts back the files a ferry run (or a UI session) changed, as they were before",
		"it: every file, or with --file one. ferry run prints the session id when it",
		"changed files (and in its json output, \"session_id\").",
		"\nAll or nothing: every file is checked first, and when one changed since the",
		"agent's edit (you or another program wrote it, moved another file over it,",
		"or made it or a folder on its path a symbolic link), nothing is restored and",
		"the file is named. A file the agent created is deleted. Writes stay inside",
		"the workspace and never go through a link ferry did not make.",
		"\nA UI session's history is in its client's state folder: --state",
		"$XDG_STATE_HOME/ferry/client (stop that client first, or undo in the UI).",
		"\nExit codes: 0 done (or listed), 1 refused or failed (nothing changed), 2 bad",
		"usage.",
	); !ok {
		return err
	}
	usageErr := func(format string, a ...any) error {
		return usageErrorf("ferry undo: "+format, a...)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("ferry undo: "+format, a...)
	}
	// Flags may follow the session id too.
	var pos []string
	for rest := fs.Args(); len(rest) > 0; rest = fs.Args() {
		pos = append(pos, rest[0])
		if err := fs.Parse(rest[1:]); errors.Is(err, flag.ErrHelp) {
			return nil
		} else if err != nil {
			return exitWith(ExitUsage)
		}
	}
	if len(pos) != 1 {
		return usageErr("give one SESSION_ID (ferry run prints it when it changed files), not %d arguments", len(pos))
	}
	session := pos[0]
	if *list && *file != "" {
		return usageErr("--list and --file: pick one (--list lists every file)")
	}
	state := *stateFlag
	if state == "" {
		var err error
		if state, err = filehistory.DefaultStateDir(env.Getenv); err != nil {
			return fail("%w; pass --state", err)
		}
	}
	dir, err := filehistory.SessionDir(state, session)
	if err != nil {
		return usageErr("%w", err)
	}
	if !filehistory.HasJournal(dir) {
		return fail("no file history for session %s in %s: the run changed no files, ran with --no-history, or the id is wrong "+
			"(a UI session's history is in its client's state folder: --state)", session, state)
	}
	unlock, err := lockClientState(state)
	if err != nil {
		return fail("%w", err)
	}
	defer unlock()

	// Open once to learn the workspace, then with it (the journal names
	// the files it restores relative to it).
	j, err := filehistory.OpenJournal(dir, session, "", filehistory.DefaultQuota)
	if err != nil {
		return fail("%w", err)
	}
	recorded, kept, dropped := historyWorkspace(j.Entries()), len(j.Entries()), j.Dropped()
	_ = j.Close()
	ws := *workspace
	if ws == "" {
		switch {
		case recorded == "" && kept == 0 && dropped:
			return fail("nothing to undo: --history-quota dropped every change of session %s (a change larger than the quota is not kept)", session)
		case recorded == "" && kept == 0:
			return fail("nothing to undo: session %s recorded no file change", session)
		case recorded == "":
			return fail("the history of session %s names no workspace; pass --workspace", session)
		}
		ws = recorded
	}
	fsys, err := vfs.NewLocal(ws)
	if err != nil {
		return fail("--workspace %s: %w", ws, err)
	}
	defer func() { _ = fsys.Close() }()
	root := fsys.Roots()[0]
	if recorded != "" && recorded != root {
		return fail("session %s changed files in %s, not in %s; pass --workspace %s (or none)", session, recorded, root, recorded)
	}
	if j, err = filehistory.OpenJournal(dir, session, root, filehistory.DefaultQuota); err != nil {
		return fail("%w", err)
	}
	defer func() { _ = j.Close() }()

	if *list {
		return listUndo(env, j, fsys, session)
	}
	var sel filehistory.Selection
	if *file != "" {
		rel := filepath.Clean(*file)
		if filepath.IsAbs(rel) {
			if r, err := filepath.Rel(root, rel); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				rel = r
			}
		}
		sel.Rel = filepath.ToSlash(rel)
	} else {
		// Everything: rewind to before the first turn with a change not
		// undone yet (every later change is undone with it).
		for _, e := range j.Entries() {
			if !e.Undone {
				sel.Turn = e.Turn
				break
			}
		}
		if sel.Turn == "" {
			if len(j.Entries()) > 0 {
				return fail("nothing to undo: every change of session %s was undone already", session)
			}
			if j.Dropped() {
				return fail("nothing to undo: --history-quota dropped every change of session %s (a change larger than the quota is not kept)", session)
			}
			return fail("nothing to undo: session %s recorded no file change that is still kept", session)
		}
	}
	restored, err := j.Restore(context.Background(), fsys, sel)
	if err != nil {
		return fail("%s", undoError(err, *file))
	}
	for _, r := range restored {
		if r.Deleted {
			fmt.Fprintf(env.Stdout, "deleted  %s (the agent created it)\n", r.Rel)
		} else {
			fmt.Fprintf(env.Stdout, "restored %s\n", r.Rel)
		}
	}
	return nil
}

// listUndo prints what the session changed and would be undone.
func listUndo(env Env, j *filehistory.Journal, fsys *vfs.Local, session string) error {
	changes, err := j.Changes(fsys)
	if err != nil {
		return fmt.Errorf("ferry undo: %w", err)
	}
	if j.Dropped() {
		fmt.Fprintln(env.Stderr, "ferry undo: --history-quota dropped the oldest changes of this session; they cannot be undone")
	}
	if len(changes) == 0 {
		fmt.Fprintf(env.Stderr, "ferry undo: nothing to undo: session %s has no change left that is not undone\n", session)
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tEDITS\tKIND\tCHANGED SINCE")
	for _, c := range changes {
		kind := "modified"
		if c.Created {
			kind = "created"
		}
		since := "no"
		if c.Modified {
			since = "yes (undo refused)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", c.Rel, len(c.Calls), kind, since)
	}
	_ = tw.Flush()
	return nil
}

// historyWorkspace is the workspace the journal's changes name: a path
// minus its relative name.
func historyWorkspace(entries []filehistory.Entry) string {
	for _, e := range entries {
		rel := filepath.FromSlash(e.Rel)
		if e.Rel == e.Path || filepath.IsAbs(rel) {
			continue // outside the workspace
		}
		if ws, ok := strings.CutSuffix(e.Path, string(filepath.Separator)+rel); ok {
			return ws
		}
	}
	return ""
}

// undoError says why a restore was refused; nothing was changed.
func undoError(err error, file string) string {
	var ce *filehistory.ConflictError
	switch {
	case errors.As(err, &ce) && ce.Later:
		return fmt.Sprintf("%s was changed again by a later edit of the agent; undo the whole session instead. Nothing was restored.", ce.Rel)
	case errors.As(err, &ce) && (ce.Link || ce.Replaced):
		return ce.Error() + "; nothing was restored. Undo it by hand."
	case errors.As(err, &ce):
		return fmt.Sprintf("%s changed since the agent's edit; nothing was restored. Undo it by hand, or put the file back as the agent left it first.", ce.Rel)
	case errors.Is(err, filehistory.ErrUndone):
		return "that change was undone already"
	case errors.Is(err, filehistory.ErrDropped):
		return "a change to undo is no longer kept (--history-quota dropped it); nothing was restored. ferry undo --list shows what is left; --file undoes one file"
	case errors.Is(err, filehistory.ErrNoChange) && file != "":
		return fmt.Sprintf("the session did not change %s (ferry undo --list shows the files it did)", file)
	case errors.Is(err, filehistory.ErrNoChange), errors.Is(err, filehistory.ErrUnknownTurn):
		return "the file history has no change that matches"
	case errors.Is(err, vfs.ErrPermission):
		return fmt.Sprintf("a file to restore is read-only or outside the workspace; nothing was restored (%v)", err)
	}
	return fmt.Sprintf("%v; nothing was restored", err)
}
