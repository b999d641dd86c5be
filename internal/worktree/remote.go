package worktree

import (
	"context"
	"fmt"
	"strings"
)

// RemoteURL is the fetch URL of the repository's remote name ("origin"
// when empty), as git resolves it (url.*.insteadOf applied):
// remote_not_found when there is no such remote. Ship reads the forge
// from it.
func (r *Repo) RemoteURL(ctx context.Context, name string) (string, error) {
	if name == "" {
		name = "origin"
	}
	if strings.HasPrefix(name, "-") {
		return "", newError(CodeRemoteNotFound, fmt.Sprintf("remote %q: name a remote (git remote -v)", name), nil)
	}
	out, err := git(ctx, r.Top, "remote", "get-url", "--", name)
	if err != nil {
		return "", newError(CodeRemoteNotFound, fmt.Sprintf("the repository has no remote %q: add one (git remote add %s URL)", name, name), err)
	}
	return strings.TrimSpace(out), nil
}
