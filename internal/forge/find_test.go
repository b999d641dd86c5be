package forge_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/forge/forgetest"
)

func TestFindPullRequest(t *testing.T) {
	s := forgetest.New(t, testToken)
	var logs bytes.Buffer
	g := newClient(t, s, &logs)
	ctx := context.Background()
	pr := samplePR()
	pr.Title = "" // not needed to look one up

	if got, found, err := g.FindPullRequest(ctx, pr); err != nil || found || got != (forge.PullRequest{}) {
		t.Fatalf("none open: %+v %v %v", got, found, err)
	}
	n := s.AddPull(forgetest.Pull{Owner: "octo", Repo: "hello", Title: "t", Head: pr.Head, Base: pr.Base})
	got, found, err := g.FindPullRequest(ctx, pr)
	if err != nil || !found || got != (forge.PullRequest{Number: n, URL: s.PullURL("octo", "hello", n)}) {
		t.Fatalf("open one: %+v %v %v", got, found, err)
	}
	for _, c := range s.Calls() {
		if c.Method != http.MethodGet || c.Path != "/repos/octo/hello/pulls" || c.RawQuery != "base=main&head=octo%3Aferry%2Ffix-parser&state=open" || !c.TokenOK {
			t.Fatalf("call %+v", c)
		}
	}
	// Another base: not that one.
	other := pr
	other.Base = "dev"
	if _, found, err := g.FindPullRequest(ctx, other); err != nil || found {
		t.Fatalf("other base: %v %v", found, err)
	}

	// A wrong token is told before anything else is done.
	bad := g
	bad.Token = "github_pat_wrong_value_123"
	_, found, err = bad.FindPullRequest(ctx, pr)
	if !errors.Is(err, forge.ErrAuth) || found {
		t.Fatalf("wrong token: %v", err)
	}
	noToken(t, "error", err.Error())
	if bytes.Contains(logs.Bytes(), []byte(bad.Token)) {
		t.Fatal("the log shows the token")
	}
	noToken(t, "log", logs.String())

	// Bad input reaches no server.
	calls := len(s.Calls())
	for _, p := range []forge.PR{{Owner: "o/x", Repo: "r", Head: "h", Base: "b"}, {Owner: "o", Repo: "r", Head: "a..b", Base: "main"}} {
		if _, _, err := g.FindPullRequest(ctx, p); !errors.Is(err, forge.ErrBadRequest) && !errors.Is(err, forge.ErrBadBranch) {
			t.Fatalf("%+v: %v", p, err)
		}
	}
	if len(s.Calls()) != calls {
		t.Fatal("bad input reached the server")
	}
}
