package forge

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// CompareURL is Config{}.CompareURL: the public forges only.
func CompareURL(remote, base, branch string) (string, error) {
	return Config{}.CompareURL(remote, base, branch)
}

// CompareURL gives the forge's page for opening a pull (merge) request of
// branch into base on the remote's repository.
func (c Config) CompareURL(remote, base, branch string) (string, error) {
	r, err := c.ParseRemote(remote)
	if err != nil {
		return "", err
	}
	return r.CompareURL(base, branch)
}

// CompareURL gives the page for opening a pull request of branch into
// base: GitHub's and Gitea's compare view, GitLab's new merge request,
// Bitbucket's new pull request, each with both branches filled in.
func (r Repo) CompareURL(base, branch string) (string, error) {
	if err := checkBranch("base", base); err != nil {
		return "", err
	}
	if err := checkBranch("branch", branch); err != nil {
		return "", err
	}
	web := r.WebURL()
	switch r.Kind {
	case KindGitHub:
		return web + "/compare/" + escapeRef(base) + "..." + escapeRef(branch) + "?expand=1", nil
	case KindGitea:
		return web + "/compare/" + escapeRef(base) + "..." + escapeRef(branch), nil
	case KindGitLab:
		return web + "/-/merge_requests/new?merge_request[source_branch]=" + url.QueryEscape(branch) +
			"&merge_request[target_branch]=" + url.QueryEscape(base), nil
	case KindBitbucket:
		return web + "/pull-requests/new?source=" + url.QueryEscape(branch) + "&dest=" + url.QueryEscape(base), nil
	}
	return "", errorf(CodeUnknownForge, "no forge is known for host %q", printable(r.Host))
}

// escapeRef escapes a branch name for a URL path, each "/"-separated part
// on its own, so that "feature/x" stays readable and the forge's router
// still sees a ref with slashes.
func escapeRef(ref string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// maxBranch bounds a branch name; git itself has no limit, forges do
// (GitHub: 255 bytes).
const maxBranch = 255

// checkBranch applies git's check-ref-format rules for a branch name, so
// that a name no forge can have is refused here rather than turned into a
// page that shows nothing.
func checkBranch(what, name string) error {
	bad := func(why string) error {
		return errorf(CodeBadBranch, "the %s name %q %s", what, printable(name), why)
	}
	switch {
	case name == "":
		return errorf(CodeBadBranch, "the %s name is empty", what)
	case len(name) > maxBranch:
		return bad("is longer than 255 bytes")
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case name == "@":
		return bad(`is "@", which git refuses`)
	case strings.HasPrefix(name, "-"):
		return bad(`starts with "-"`)
	case strings.Contains(name, ".."), strings.Contains(name, "@{"), strings.Contains(name, "//"):
		return bad(`holds "..", "@{" or "//", which git refuses`)
	case strings.HasPrefix(name, "/"), strings.HasSuffix(name, "/"), strings.HasSuffix(name, "."):
		return bad(`starts or ends with "/" or ends with "."`)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad("holds a space, a control character or one of ~^:?*[\\, which git refuses")
		}
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad(`has a part starting with "." or ending with ".lock"`)
		}
	}
	return nil
}
