package worktree

import (
	"context"
	"strconv"
	"strings"
)

// Commit is one commit of a branch.
type Commit struct {
	Hash    string `json:"hash"`
	Subject string `json:"subject"`
	Body    string `json:"body,omitempty"`
}

// maxCommitsListed bounds Commits: a branch of a session has a few.
const maxCommitsListed = 200

// Commits is the branch's commits that its base has not, oldest first (at
// most the newest 200). Ship names a squash commit and a pull request
// after them.
func (w *Worktree) Commits(ctx context.Context) ([]Commit, error) {
	out, err := gitCmd{dir: w.Repo.Top, args: []string{"log", "--reverse", "--no-merges", "-n", strconv.Itoa(maxCommitsListed), "--format=%H%x00%s%x00%b%x1e",
		"refs/heads/" + w.Branch, "^refs/heads/" + w.Base, "--"}, limit: 4 << 20}.output(ctx)
	if err != nil {
		if ok, _ := w.Repo.branchExists(ctx, w.Base); !ok {
			return nil, newError(CodeBaseNotFound, "the base branch "+w.Base+" is gone: recreate it", err)
		}
		return nil, err
	}
	var list []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		f := strings.SplitN(strings.TrimLeft(rec, "\n"), "\x00", 3)
		if len(f) != 3 || f[0] == "" {
			continue
		}
		list = append(list, Commit{Hash: f[0], Subject: f[1], Body: strings.TrimSpace(f[2])})
	}
	return list, nil
}
