package forge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/forge/forgetest"
)

const testToken = "github_pat_11AAAAAAA0testTOKENvalue_zz9"

func newClient(t *testing.T, s *forgetest.Server, logs *bytes.Buffer) forge.GitHub {
	t.Helper()
	g := forge.GitHub{BaseURL: s.URL, Token: testToken, TokenSource: "FERRY_GITHUB_TOKEN", Timeout: 5 * time.Second}
	if logs != nil {
		g.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return g
}

func samplePR() forge.PR {
	return forge.PR{Owner: "octo", Repo: "hello", Title: "Fix the parser", Body: "Made by ferry.\n\n- one", Head: "ferry/fix-parser", Base: "main", Draft: true}
}

// noToken fails the test when the token shows anywhere in text.
func noToken(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, testToken) || strings.Contains(text, testToken[:20]) {
		t.Errorf("%s shows the token: %s", what, text)
	}
}

func TestCreatePullRequest(t *testing.T) {
	s := forgetest.New(t, testToken)
	var logs bytes.Buffer
	g := newClient(t, s, &logs)
	got, err := g.CreatePullRequest(context.Background(), samplePR())
	if err != nil {
		t.Fatalf("CreatePullRequest: %v", err)
	}
	if want := (forge.PullRequest{Number: 1, URL: s.PullURL("octo", "hello", 1)}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	calls := s.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1: %+v", len(calls), calls)
	}
	c := calls[0]
	if c.Method != http.MethodPost || c.Path != "/repos/octo/hello/pulls" || !c.TokenOK {
		t.Errorf("call %s %s token ok %v", c.Method, c.Path, c.TokenOK)
	}
	for h, want := range map[string]string{
		"Authorization":        "Bearer " + forgetest.Redacted,
		"Accept":               "application/vnd.github+json",
		"X-Github-Api-Version": "2022-11-28",
		"Content-Type":         "application/json",
	} {
		if v := c.Header.Get(h); v != want {
			t.Errorf("header %s = %q, want %q", h, v, want)
		}
	}
	if ua := c.Header.Get("User-Agent"); !strings.HasPrefix(ua, "ferry/") {
		t.Errorf("User-Agent %q", ua)
	}
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"title": "Fix the parser", "body": "Made by ferry.\n\n- one", "head": "ferry/fix-parser", "base": "main", "draft": true}
	if len(body) != len(want) {
		t.Errorf("body %v, want %v", body, want)
	}
	for k, v := range want {
		if body[k] != v {
			t.Errorf("body[%s] = %v, want %v", k, body[k], v)
		}
	}
	if !strings.Contains(logs.String(), `"path":"/repos/octo/hello/pulls"`) {
		t.Errorf("no request logged: %s", logs.String())
	}
	noToken(t, "log", logs.String())
}

func TestCreatePullRequestOddBranch(t *testing.T) {
	s := forgetest.New(t, testToken)
	g := newClient(t, s, nil)
	pr := samplePR()
	pr.Head, pr.Base = "ferry/naïve#1%&x=y", "release/2.0"
	if _, err := g.CreatePullRequest(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	if p := s.Pulls()[0]; p.Head != pr.Head || p.Base != pr.Base {
		t.Errorf("GitHub got head %q base %q", p.Head, p.Base)
	}
	// Asked again, the existing one is found by its head, query-escaped.
	got, err := g.CreatePullRequest(context.Background(), pr)
	if !errors.Is(err, forge.ErrPullRequestExists) || got.Number != 1 {
		t.Fatalf("again: %+v, %v", got, err)
	}
	last := s.Calls()[len(s.Calls())-1]
	if last.Method != http.MethodGet || !strings.Contains(last.RawQuery, "head=octo%3Aferry%2Fna%C3%AFve%231%25%26x%3Dy") {
		t.Errorf("lookup %s ?%s", last.Method, last.RawQuery)
	}
}

func TestCreatePullRequestErrors(t *testing.T) {
	cases := []struct {
		name   string
		fail   forgetest.Fail
		token  string
		want   error
		status int
		words  []string
	}{
		{"wrong token", forgetest.None, "ghp_wrongwrongwrongwrong", forge.ErrAuth, 401, []string{"FERRY_GITHUB_TOKEN", "Pull requests: read and write", "Contents: read", "Bad credentials"}},
		{"401", forgetest.Unauthorized, testToken, forge.ErrAuth, 401, []string{"FERRY_GITHUB_TOKEN", "Pull requests: read and write", "Contents: read"}},
		{"403", forgetest.Forbidden, testToken, forge.ErrAuth, 403, []string{"FERRY_GITHUB_TOKEN", "octo/hello", "Pull requests: read and write", "Resource not accessible"}},
		{"no head", forgetest.NoHead, testToken, forge.ErrBranchNotPushed, 422, []string{"ferry/fix-parser", "push it first"}},
		{"exists", forgetest.Exists, testToken, forge.ErrPullRequestExists, 422, []string{"already exists"}},
		{"429", forgetest.RateLimited, testToken, forge.ErrRateLimited, 429, []string{"rate limit", "resets at"}},
		{"403 rate", forgetest.RateLimited403, testToken, forge.ErrRateLimited, 403, []string{"rate limit", "resets at"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := forgetest.New(t, testToken)
			s.SetFail(c.fail)
			var logs bytes.Buffer
			g := newClient(t, s, &logs)
			g.Token = c.token
			_, err := g.CreatePullRequest(context.Background(), samplePR())
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			var fe *forge.Error
			if !errors.As(err, &fe) || fe.Status != c.status {
				t.Errorf("status %d, want %d", fe.Status, c.status)
			}
			for _, w := range c.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if errors.Is(c.want, forge.ErrRateLimited) && !fe.RetryAt.Equal(s.RateLimitReset()) {
				t.Errorf("RetryAt %v, want %v", fe.RetryAt, s.RateLimitReset())
			}
			noToken(t, "error", err.Error())
			noToken(t, "log", logs.String())
			if len(s.Pulls()) != 0 {
				t.Errorf("a pull request was made: %+v", s.Pulls())
			}
		})
	}
}

func TestCreatePullRequestExistsReturnsIt(t *testing.T) {
	s := forgetest.New(t, testToken)
	n := s.AddPull(forgetest.Pull{Owner: "octo", Repo: "hello", Title: "by hand", Head: "ferry/fix-parser", Base: "main"})
	got, err := newClient(t, s, nil).CreatePullRequest(context.Background(), samplePR())
	if !errors.Is(err, forge.ErrPullRequestExists) {
		t.Fatalf("err = %v", err)
	}
	want := forge.PullRequest{Number: n, URL: s.PullURL("octo", "hello", n)}
	if got != want || !strings.Contains(err.Error(), want.URL) {
		t.Errorf("got %+v, %v; want %+v named in the error", got, err, want)
	}
	calls := s.Calls()
	if len(calls) != 2 || calls[1].Method != http.MethodGet || calls[1].Path != "/repos/octo/hello/pulls" ||
		!strings.Contains(calls[1].RawQuery, "head=octo%3Aferry%2Ffix-parser") || !strings.Contains(calls[1].RawQuery, "state=open") {
		t.Errorf("calls %+v", calls)
	}
}

func TestCreatePullRequestBranchesFromServer(t *testing.T) {
	s := forgetest.New(t, testToken)
	s.SetBranches("main", "ferry/fix-parser")
	g := newClient(t, s, nil)
	pr := samplePR()
	pr.Base = "trunk"
	if _, err := g.CreatePullRequest(context.Background(), pr); !errors.Is(err, forge.ErrBaseNotFound) {
		t.Errorf("unknown base: %v", err)
	}
	pr = samplePR()
	pr.Head = "ferry/never-pushed"
	if _, err := g.CreatePullRequest(context.Background(), pr); !errors.Is(err, forge.ErrBranchNotPushed) {
		t.Errorf("unpushed head: %v", err)
	}
}

// GitHub's own words are scrubbed of the token even if a server echoes it,
// and cut short.
func TestForgeTextNeverShowsToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"message": "you sent " + r.Header.Get("Authorization") + "\x1b[31m" + strings.Repeat("x", 5000),
		})
	}))
	defer srv.Close()
	var logs bytes.Buffer
	g := forge.GitHub{BaseURL: srv.URL, Token: testToken, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	_, err := g.CreatePullRequest(context.Background(), samplePR())
	if !errors.Is(err, forge.ErrForge) {
		t.Fatalf("err = %v", err)
	}
	noToken(t, "error", err.Error())
	noToken(t, "log", logs.String())
	if strings.Contains(err.Error(), "\x1b") || len(err.Error()) > 600 {
		t.Errorf("forge text not cleaned: %q", err)
	}
}

func TestCreatePullRequestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	g := forge.GitHub{BaseURL: "http://" + addr, Token: testToken}
	if _, err := g.CreatePullRequest(context.Background(), samplePR()); !errors.Is(err, forge.ErrUnreachable) {
		t.Errorf("closed port: %v", err)
	} else {
		noToken(t, "error", err.Error())
	}

	// A server that never answers: the timeout ends the call.
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	g = forge.GitHub{BaseURL: srv.URL, Token: testToken, Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err = g.CreatePullRequest(context.Background(), samplePR())
	if !errors.Is(err, forge.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "in time") {
		t.Errorf("hung server: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}

	// 5xx: GitHub is down.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"Server Error"}`, http.StatusBadGateway)
	}))
	defer down.Close()
	g = forge.GitHub{BaseURL: down.URL, Token: testToken}
	if _, err := g.CreatePullRequest(context.Background(), samplePR()); !errors.Is(err, forge.ErrUnreachable) {
		t.Errorf("502: %v", err)
	}
}

// An answer larger than the bound is not read whole.
func TestCreatePullRequestBoundedBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"number":1,"html_url":"https://x/y","pad":"`))
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for range 64 { // 4 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}`))
	}))
	defer srv.Close()
	g := forge.GitHub{BaseURL: srv.URL, Token: testToken}
	if _, err := g.CreatePullRequest(context.Background(), samplePR()); !errors.Is(err, forge.ErrForge) || !strings.Contains(err.Error(), "larger") {
		t.Errorf("oversized answer: %v", err)
	}
}

func TestCreatePullRequestBadInput(t *testing.T) {
	s := forgetest.New(t, testToken)
	g := newClient(t, s, nil)
	for name, mod := range map[string]func(*forge.PR){
		"no title":     func(p *forge.PR) { p.Title = "  " },
		"bad owner":    func(p *forge.PR) { p.Owner = "../x" },
		"bad repo":     func(p *forge.PR) { p.Repo = "r/../../admin" },
		"empty head":   func(p *forge.PR) { p.Head = "" },
		"bad head":     func(p *forge.PR) { p.Head = "a..b" },
		"bad base":     func(p *forge.PR) { p.Base = "x y" },
		"bad head own": func(p *forge.PR) { p.Head = "a/b:branch" },
	} {
		pr := samplePR()
		mod(&pr)
		_, err := g.CreatePullRequest(context.Background(), pr)
		var fe *forge.Error
		if !errors.As(err, &fe) || (fe.Code != forge.CodeBadRequest && fe.Code != forge.CodeBadBranch) {
			t.Errorf("%s: %v", name, err)
		}
	}
	g.Token = ""
	if _, err := g.CreatePullRequest(context.Background(), samplePR()); !errors.Is(err, forge.ErrNoToken) {
		t.Errorf("no token: %v", err)
	}
	g.Token = testToken + "\r\nX-Evil: 1"
	if _, err := g.CreatePullRequest(context.Background(), samplePR()); !errors.Is(err, forge.ErrAuth) {
		t.Errorf("token with CRLF: %v", err)
	} else {
		noToken(t, "error", err.Error())
	}
	g.Token = testToken
	g.BaseURL = "https://user:pw@api.example/"
	if _, err := g.CreatePullRequest(context.Background(), samplePR()); !errors.Is(err, forge.ErrUnreachable) || strings.Contains(err.Error(), "pw") {
		t.Errorf("base with credentials: %v", err)
	}
	if n := len(s.Calls()); n != 0 {
		t.Errorf("%d calls made for bad input", n)
	}
}

func TestTokenFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		env        map[string]string
		tok, using string
	}{
		{map[string]string{"FERRY_GITHUB_TOKEN": "a", "GH_TOKEN": "b", "GITHUB_TOKEN": "c"}, "a", "FERRY_GITHUB_TOKEN"},
		{map[string]string{"FERRY_GITHUB_TOKEN": "  ", "GH_TOKEN": "b", "GITHUB_TOKEN": "c"}, "b", "GH_TOKEN"},
		{map[string]string{"GITHUB_TOKEN": " c\n"}, "c", "GITHUB_TOKEN"},
	}
	for _, c := range cases {
		tok, using, err := forge.TokenFromEnv(env(c.env))
		if err != nil || tok != c.tok || using != c.using {
			t.Errorf("%v: %q from %q, %v", c.env, tok, using, err)
		}
	}
	_, _, err := forge.TokenFromEnv(env(nil))
	if !errors.Is(err, forge.ErrNoToken) || !strings.Contains(err.Error(), "FERRY_GITHUB_TOKEN") || !strings.Contains(err.Error(), "GH_TOKEN") {
		t.Errorf("no token: %v", err)
	}
}
