package forge_test

import (
	"errors"
	"net/url"
	"testing"
	"unicode"

	"github.com/ferry-dev/ferry/internal/forge"
)

// FuzzParseRemote: whatever the remote and branch, parsing never panics;
// a parsed repository round-trips through its web URL, and its compare URL
// stays on the forge's host and reads back the branch asked for. Seeds are
// in testdata/fuzz/FuzzParseRemote.
func FuzzParseRemote(f *testing.F) {
	cfg := forge.Config{Hosts: map[string]forge.Kind{
		"ghe.example.com": forge.KindGitHub, "gitlab.corp.test": forge.KindGitLab, "gitea.home.test": forge.KindGitea,
	}}
	f.Fuzz(func(t *testing.T, remote, branch string) {
		r, err := cfg.ParseRemote(remote)
		if err != nil {
			var fe *forge.Error
			if !errors.As(err, &fe) || fe.Code != forge.CodeUnknownForge {
				t.Fatalf("ParseRemote(%q): %v, want unknown_forge", remote, err)
			}
			for _, c := range fe.Message {
				if unicode.IsControl(c) {
					t.Fatalf("message holds a control character: %q", fe.Message)
				}
			}
			if len(fe.Message) > 400 {
				t.Fatalf("message of %d bytes", len(fe.Message))
			}
			return
		}
		if r.Owner == "" || r.Name == "" || r.Host == "" || (r.Scheme != "https" && r.Scheme != "http") {
			t.Fatalf("ParseRemote(%q) = %+v", remote, r)
		}
		again, err := cfg.ParseRemote(r.WebURL() + ".git")
		if err != nil || again != r {
			t.Fatalf("%q: web URL %q parses to %+v, %v; want %+v", remote, r.WebURL(), again, err, r)
		}
		got, err := r.CompareURL("main", branch)
		if err != nil {
			if !errors.Is(err, forge.ErrBadBranch) {
				t.Fatalf("CompareURL(%q): %v", branch, err)
			}
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("%q does not parse: %v", got, err)
		}
		if u.Host != r.Host || u.User != nil || u.Fragment != "" {
			t.Fatalf("%q leaves the forge %s", got, r.Host)
		}
		if base, head := readBack(t, u); base != "main" || head != branch {
			t.Fatalf("%q reads back base %q head %q, want %q", got, base, head, branch)
		}
	})
}
