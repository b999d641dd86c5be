package forge

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// Kind is a family of forges sharing URL layouts and an API.
type Kind string

// The forges ferry knows.
const (
	KindGitHub    Kind = "github"
	KindGitLab    Kind = "gitlab"
	KindGitea     Kind = "gitea" // Codeberg runs Forgejo, a Gitea fork
	KindBitbucket Kind = "bitbucket"
)

// knownHosts are the public forges. The ssh-over-443 hosts lead to the
// same web host.
var knownHosts = map[string]struct {
	kind Kind
	web  string
}{
	"github.com":           {KindGitHub, "github.com"},
	"www.github.com":       {KindGitHub, "github.com"},
	"ssh.github.com":       {KindGitHub, "github.com"},
	"gitlab.com":           {KindGitLab, "gitlab.com"},
	"www.gitlab.com":       {KindGitLab, "gitlab.com"},
	"altssh.gitlab.com":    {KindGitLab, "gitlab.com"},
	"codeberg.org":         {KindGitea, "codeberg.org"},
	"bitbucket.org":        {KindBitbucket, "bitbucket.org"},
	"altssh.bitbucket.org": {KindBitbucket, "bitbucket.org"},
}

// Config adds self-hosted forges: Hosts maps a host name (as in the
// remote URL, without port; matched case-insensitively) to its kind, e.g.
// "github.example.com": KindGitHub for GitHub Enterprise Server.
type Config struct {
	Hosts map[string]Kind
}

// Repo is one repository on a forge.
type Repo struct {
	Kind Kind
	// Scheme and Host are the forge's web origin ("https", "github.com";
	// Host keeps a non-default port of an http(s) remote).
	Scheme, Host string
	// Owner is the user or organisation; on GitLab the whole namespace
	// ("group/subgroup").
	Owner string
	Name  string
}

// WebURL is the repository's home page.
func (r Repo) WebURL() string {
	return r.Scheme + "://" + r.Host + "/" + r.Owner + "/" + r.Name
}

// APIURL is the base of GitHub's REST API for the repository's host:
// https://api.github.com for github.com, https://HOST/api/v3 for GitHub
// Enterprise Server. Empty for other kinds.
func (r Repo) APIURL() string {
	if r.Kind != KindGitHub {
		return ""
	}
	if r.Host == "github.com" {
		return DefaultGitHubAPI
	}
	return r.Scheme + "://" + r.Host + "/api/v3"
}

// ParseRemote is Config{}.ParseRemote: the public forges only.
func ParseRemote(remote string) (Repo, error) { return Config{}.ParseRemote(remote) }

// maxRemote bounds the remote URL read; no real one comes near.
const maxRemote = 4096

// ParseRemote tells the forge and repository of a git remote URL.
func (c Config) ParseRemote(remote string) (Repo, error) {
	remote = strings.TrimSpace(remote)
	if remote == "" {
		return Repo{}, errorf(CodeUnknownForge, "the remote URL is empty")
	}
	if len(remote) > maxRemote || !utf8.ValidString(remote) || hasControl(remote) {
		return Repo{}, errorf(CodeUnknownForge, "the remote URL is not one ferry can read")
	}
	scheme, host, port, path, ok := splitRemote(remote)
	if !ok {
		return Repo{}, errorf(CodeUnknownForge, "the remote is not a URL of a forge (a local path?)")
	}
	kind, web, ok := c.lookup(host)
	if !ok {
		return Repo{}, errorf(CodeUnknownForge, "no forge is known for host %q (add it to the forge hosts in the config)", printable(host))
	}
	r := Repo{Kind: kind, Scheme: "https", Host: web}
	if scheme == "http" || scheme == "https" {
		// A self-hosted forge served over plain http or on another port
		// has its web pages there too; ssh and git ports say nothing
		// about the web.
		r.Scheme = scheme
		if port != "" && (scheme == "http" && port != "80" || scheme == "https" && port != "443") {
			r.Host = web + ":" + port
		}
	}
	segs, ok := pathSegments(path)
	if !ok {
		return Repo{}, errorf(CodeUnknownForge, "the remote's path is not owner/repository on %s", r.Host)
	}
	switch {
	case kind == KindGitLab && len(segs) >= 2:
		// GitLab nests groups: the project is the last segment.
	case len(segs) == 2:
	default:
		return Repo{}, errorf(CodeUnknownForge, "the remote's path is not owner/repository on %s", r.Host)
	}
	r.Owner = strings.Join(segs[:len(segs)-1], "/")
	r.Name = segs[len(segs)-1]
	return r, nil
}

func (c Config) lookup(host string) (Kind, string, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return "", "", false
	}
	for h, k := range c.Hosts {
		if strings.EqualFold(h, host) && validKind(k) {
			return k, host, true
		}
	}
	if k, ok := knownHosts[host]; ok {
		return k.kind, k.web, true
	}
	return "", "", false
}

func validKind(k Kind) bool {
	switch k {
	case KindGitHub, KindGitLab, KindGitea, KindBitbucket:
		return true
	}
	return false
}

// splitRemote takes a remote apart as git does: a URL with a scheme, or
// the scp-like [user@]host:path (a ":" before any "/"). Userinfo is
// dropped. ok is false for local paths and unreadable URLs.
func splitRemote(remote string) (scheme, host, port, path string, ok bool) {
	if i := strings.Index(remote, "://"); i > 0 {
		u, err := url.Parse(remote)
		if err != nil || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" {
			return "", "", "", "", false
		}
		scheme = strings.ToLower(u.Scheme)
		switch scheme {
		case "git+ssh", "ssh+git":
			scheme = "ssh"
		case "https", "http", "ssh", "git":
		default:
			return "", "", "", "", false
		}
		return scheme, u.Hostname(), u.Port(), u.Path, u.Hostname() != ""
	}
	colon := strings.IndexByte(remote, ':')
	if colon <= 0 || strings.ContainsRune(remote[:colon], '/') {
		return "", "", "", "", false
	}
	host = remote[:colon]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	// "[host]:path" is git's bracketed form (for an IPv6 address or a
	// host with a port inside the brackets).
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if h, _, found := strings.Cut(host, ":"); found {
		host = h
	}
	if host == "" || strings.ContainsAny(host, "@[]") {
		return "", "", "", "", false
	}
	return "ssh", host, "", remote[colon+1:], true
}

// pathSegments splits a remote's path into owner…/name, dropping a
// leading "/" or "~", a trailing "/" and ".git".
func pathSegments(path string) ([]string, bool) {
	path = strings.TrimPrefix(path, "/")
	path = strings.TrimSuffix(path, "/")
	path = strings.TrimSuffix(path, ".git")
	if path == "" {
		return nil, false
	}
	segs := strings.Split(path, "/")
	for _, s := range segs {
		if !validSegment(s) {
			return nil, false
		}
	}
	return segs, true
}

// validSegment: forges allow only these characters in owner and
// repository names, so the segment needs no escaping in any URL.
func validSegment(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, b := range []byte(s) {
		ok := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-'
		if !ok {
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// printable cuts s short and keeps only printable ASCII, for echoing
// outside text in a message.
func printable(s string) string {
	const max = 100
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
		} else {
			b.WriteRune('?')
		}
	}
	return b.String()
}
