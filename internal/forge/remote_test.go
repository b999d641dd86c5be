package forge_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/forge"
)

func TestParseRemoteForms(t *testing.T) {
	cfg := forge.Config{Hosts: map[string]forge.Kind{
		"GHE.Example.com":   forge.KindGitHub,
		"gitlab.corp.test":  forge.KindGitLab,
		"gitea.home.test":   forge.KindGitea,
		"ignored.kind.test": forge.Kind("svn"),
		"git.example.org":   forge.KindGitea,
	}}
	cases := []struct {
		remote string
		want   forge.Repo
	}{
		// GitHub, every form git accepts.
		{"https://github.com/o/r", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"https://github.com/o/r.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"https://github.com/o/r.git/", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"  https://GitHub.COM/Some-Org/my.repo_x.git\n", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "Some-Org", Name: "my.repo_x"}},
		{"https://user:s3cret@github.com/o/r.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"https://x-access-token:ghp_abc@github.com:443/o/r", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"http://github.com/o/r", forge.Repo{Kind: forge.KindGitHub, Scheme: "http", Host: "github.com", Owner: "o", Name: "r"}},
		{"git@github.com:o/r.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"git@github.com:/o/r.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"github.com:o/r", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"ssh://git@github.com/o/r.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"ssh://git@ssh.github.com:443/o/r.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"git+ssh://git@github.com/o/r", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"ssh+git://git@github.com/o/r", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		{"git://github.com/o/r.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "github.com", Owner: "o", Name: "r"}},
		// GitHub Enterprise from the config, host matched case-insensitively.
		{"https://ghe.example.com/team/app.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "ghe.example.com", Owner: "team", Name: "app"}},
		{"https://ghe.example.com:8443/team/app.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "ghe.example.com:8443", Owner: "team", Name: "app"}},
		{"git@GHE.example.com:team/app.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "ghe.example.com", Owner: "team", Name: "app"}},
		{"ssh://git@ghe.example.com:2222/team/app.git", forge.Repo{Kind: forge.KindGitHub, Scheme: "https", Host: "ghe.example.com", Owner: "team", Name: "app"}},
		// GitLab, subgroups included.
		{"https://gitlab.com/g/p.git", forge.Repo{Kind: forge.KindGitLab, Scheme: "https", Host: "gitlab.com", Owner: "g", Name: "p"}},
		{"git@gitlab.com:g/sub/deeper/p.git", forge.Repo{Kind: forge.KindGitLab, Scheme: "https", Host: "gitlab.com", Owner: "g/sub/deeper", Name: "p"}},
		{"ssh://git@altssh.gitlab.com:443/g/p.git", forge.Repo{Kind: forge.KindGitLab, Scheme: "https", Host: "gitlab.com", Owner: "g", Name: "p"}},
		{"http://gitlab.corp.test:8080/g/p", forge.Repo{Kind: forge.KindGitLab, Scheme: "http", Host: "gitlab.corp.test:8080", Owner: "g", Name: "p"}},
		// Codeberg and self-hosted Gitea.
		{"https://codeberg.org/o/r.git", forge.Repo{Kind: forge.KindGitea, Scheme: "https", Host: "codeberg.org", Owner: "o", Name: "r"}},
		{"git@codeberg.org:o/r.git", forge.Repo{Kind: forge.KindGitea, Scheme: "https", Host: "codeberg.org", Owner: "o", Name: "r"}},
		{"ssh://git@gitea.home.test:2222/o/r.git", forge.Repo{Kind: forge.KindGitea, Scheme: "https", Host: "gitea.home.test", Owner: "o", Name: "r"}},
		// Bitbucket.
		{"https://someone@bitbucket.org/ws/r.git", forge.Repo{Kind: forge.KindBitbucket, Scheme: "https", Host: "bitbucket.org", Owner: "ws", Name: "r"}},
		{"git@bitbucket.org:ws/r.git", forge.Repo{Kind: forge.KindBitbucket, Scheme: "https", Host: "bitbucket.org", Owner: "ws", Name: "r"}},
	}
	for _, c := range cases {
		got, err := cfg.ParseRemote(c.remote)
		if err != nil {
			t.Errorf("ParseRemote(%q): %v", c.remote, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseRemote(%q) = %+v, want %+v", c.remote, got, c.want)
		}
	}
}

func TestParseRemoteUnknown(t *testing.T) {
	cfg := forge.Config{Hosts: map[string]forge.Kind{"ignored.kind.test": forge.Kind("svn")}}
	for _, remote := range []string{
		"", "   ",
		"/home/me/repo.git", "./repo", "../other", "file:///srv/git/r.git", `C:\repos\r`,
		"https://example.com/o/r.git", "git@example.com:o/r.git", "ssh://git@ignored.kind.test/o/r",
		"https://github.com/o", "https://github.com/o/r/tree/main", "https://github.com/", "https://github.com/o/../r",
		"https://github.com/o/r%20x", "https://github.com/o/r?x=1", "https://github.com/o/r#frag",
		"https://github.com/o/r\x00", "https://github.com/ö/r", "ftp://github.com/o/r",
		"github.com/o/r", "git@github.com:", "git@github.com:o//r", "https://gitlab.com/onlyone",
		"https://bitbucket.org/a/b/c", "https://codeberg.org/a/b/c",
		"https://" + strings.Repeat("a", 5000) + ".com/o/r",
	} {
		_, err := cfg.ParseRemote(remote)
		if !errors.Is(err, forge.ErrUnknownForge) {
			t.Errorf("ParseRemote(%q) = %v, want unknown_forge", remote, err)
		}
	}
}

// A credential in the remote URL appears in no error.
func TestParseRemoteHidesCredentials(t *testing.T) {
	for _, remote := range []string{
		"https://me:hunter2secret@example.com/o/r.git",
		"https://me:hunter2secret@github.com/o/too/many",
		"https://hunter2secret@github.com/o",
	} {
		_, err := forge.ParseRemote(remote)
		if err == nil {
			t.Fatalf("ParseRemote(%q) succeeded", remote)
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("error for %q shows the credential: %v", remote, err)
		}
	}
	url, err := forge.CompareURL("https://me:hunter2secret@github.com/o/r.git", "main", "x")
	if err != nil || strings.Contains(url, "hunter2secret") {
		t.Errorf("CompareURL = %q, %v", url, err)
	}
}

func TestCompareURLEachForge(t *testing.T) {
	cfg := forge.Config{Hosts: map[string]forge.Kind{"ghe.example.com": forge.KindGitHub}}
	cases := []struct{ remote, want string }{
		{"git@github.com:o/r.git", "https://github.com/o/r/compare/main...ferry/fix-it?expand=1"},
		{"https://ghe.example.com/o/r", "https://ghe.example.com/o/r/compare/main...ferry/fix-it?expand=1"},
		{"git@gitlab.com:g/sub/p.git", "https://gitlab.com/g/sub/p/-/merge_requests/new?merge_request[source_branch]=ferry%2Ffix-it&merge_request[target_branch]=main"},
		{"https://codeberg.org/o/r.git", "https://codeberg.org/o/r/compare/main...ferry/fix-it"},
		{"git@bitbucket.org:ws/r.git", "https://bitbucket.org/ws/r/pull-requests/new?source=ferry%2Ffix-it&dest=main"},
	}
	for _, c := range cases {
		got, err := cfg.CompareURL(c.remote, "main", "ferry/fix-it")
		if err != nil || got != c.want {
			t.Errorf("CompareURL(%q) = %q, %v; want %q", c.remote, got, err, c.want)
		}
	}
	if _, err := forge.CompareURL("https://example.com/o/r", "main", "x"); !errors.Is(err, forge.ErrUnknownForge) {
		t.Errorf("unknown host: %v, want unknown_forge", err)
	}
}

// Odd branch names survive the round trip: the forge's router reads back
// exactly the branch (and base) that was asked for.
func TestCompareURLEscaping(t *testing.T) {
	branches := []string{
		"ferry/feature/deep", "fix#12", "100%-done", "naïve-ünïcode", "日本語/ブランチ",
		"a&b=c", "plus+sign", "semi;colon", "emoji-🚀", "tab'quote\"", "x,y",
	}
	remotes := []string{"git@github.com:o/r.git", "git@gitlab.com:o/r.git", "git@codeberg.org:o/r.git", "git@bitbucket.org:o/r.git"}
	for _, remote := range remotes {
		for _, b := range branches {
			got, err := forge.CompareURL(remote, "release/1.0#x", b)
			if err != nil {
				t.Errorf("CompareURL(%q, %q): %v", remote, b, err)
				continue
			}
			u, err := url.Parse(got)
			if err != nil {
				t.Fatalf("%q does not parse: %v", got, err)
			}
			if u.Fragment != "" || u.Host == "" || strings.ContainsAny(got, " \"'#") {
				t.Errorf("%q: not escaped (fragment %q)", got, u.Fragment)
			}
			base, head := readBack(t, u)
			if base != "release/1.0#x" || head != b {
				t.Errorf("%s: read back base %q head %q, want %q, %q", got, base, head, "release/1.0#x", b)
			}
		}
	}
}

// readBack decodes a compare URL as each forge's router would.
func readBack(t *testing.T, u *url.URL) (base, head string) {
	t.Helper()
	q := u.Query()
	switch {
	case q.Has("merge_request[source_branch]"):
		return q.Get("merge_request[target_branch]"), q.Get("merge_request[source_branch]")
	case q.Has("source"):
		return q.Get("dest"), q.Get("source")
	}
	_, rest, ok := strings.Cut(u.Path, "/compare/")
	if !ok {
		t.Fatalf("%s: no compare path", u)
	}
	base, head, _ = strings.Cut(rest, "...")
	return base, head
}

func TestCompareURLRefusesBadBranches(t *testing.T) {
	for _, b := range []string{
		"", "a..b", "a b", "-x", "x/", "/x", "x.", "x.lock", "a/.hidden", "a//b", "a@{1}", "@",
		"a~1", "a^", "a:b", "a?*", "a[b", `a\b`, "a\x00b", "a\nb", "a\x7fb", "\xff", strings.Repeat("x", 256),
	} {
		if _, err := forge.CompareURL("git@github.com:o/r.git", "main", b); !errors.Is(err, forge.ErrBadBranch) {
			t.Errorf("branch %q: %v, want bad_branch", b, err)
		}
		if _, err := forge.CompareURL("git@github.com:o/r.git", b, "ok"); !errors.Is(err, forge.ErrBadBranch) {
			t.Errorf("base %q: %v, want bad_branch", b, err)
		}
	}
}

func TestAPIURL(t *testing.T) {
	cfg := forge.Config{Hosts: map[string]forge.Kind{"ghe.example.com": forge.KindGitHub}}
	for remote, want := range map[string]string{
		"git@github.com:o/r.git":               forge.DefaultGitHubAPI,
		"git@ghe.example.com:o/r.git":          "https://ghe.example.com/api/v3",
		"https://ghe.example.com:8443/o/r.git": "https://ghe.example.com:8443/api/v3",
		"git@gitlab.com:o/r.git":               "",
	} {
		r, err := cfg.ParseRemote(remote)
		if err != nil || r.APIURL() != want {
			t.Errorf("APIURL of %q = %q, %v; want %q", remote, r.APIURL(), err, want)
		}
	}
}
