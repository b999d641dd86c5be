// Package forgetest is a stand-in GitHub REST API on loopback for tests.
// It speaks the wire format of the endpoints ferry uses, as GitHub's REST
// documentation gives them:
//
//   - POST /repos/{owner}/{repo}/pulls with a JSON body {title, head, base,
//     body, draft}: 201 with a pull-request object (number, html_url, url,
//     state, title, body, draft, head/base {label, ref, sha}) and a
//     Location header; 422 "Validation Failed" with errors entries
//     {resource, field, code[, message]} for a missing field, an unknown
//     head or base branch, or an open pull request of the same head and
//     base ("A pull request already exists for owner:branch.").
//   - GET /repos/{owner}/{repo}/pulls?head=owner:branch&base=&state=: the
//     JSON array of matching pull requests.
//   - The same under /api/v3 (GitHub Enterprise Server's API root), so a
//     remote http://127.0.0.1:PORT/OWNER/REPO with the host named a GitHub
//     one in forge.Config reaches it without an HTTP client of its own.
//   - 401 {"message":"Bad credentials"} for a missing or wrong token
//     (Authorization: Bearer TOKEN or token TOKEN); 404 {"message":"Not
//     Found"} for anything else.
//
// It records every call (method, path, query, headers with the token's
// value replaced, body) so a test can assert the pull-request call, and
// can be told to answer 401, 422-exists, 422-no-head or a rate limit.
package forgetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Redacted replaces the token in recorded Authorization headers.
const Redacted = "[redacted]"

// Call is one request the Server received.
type Call struct {
	Method   string
	Path     string
	RawQuery string
	// Header is the request's headers; Authorization keeps its scheme
	// with the credential replaced by Redacted.
	Header http.Header
	Body   []byte
	// TokenOK: the Authorization header held the Server's token.
	TokenOK bool
}

// Fail makes the Server refuse every later pull-request call.
type Fail int

// What Fail can make the Server answer.
const (
	None           Fail = iota
	Unauthorized        // 401 Bad credentials
	Exists              // 422 A pull request already exists
	NoHead              // 422 errors[{field: head, code: invalid}]
	RateLimited         // 429 with x-ratelimit-remaining 0 and a reset time
	RateLimited403      // 403 "API rate limit exceeded" with x-ratelimit-remaining 0
	Forbidden           // 403 Resource not accessible by personal access token
)

// Pull is a pull request the Server holds.
type Pull struct {
	Owner, Repo string
	Number      int
	Title, Body string
	Head, Base  string // branch names
	HeadLabel   string // "owner:branch"
	Draft       bool
	Open        bool
}

// Server is the stand-in GitHub.
type Server struct {
	*httptest.Server
	token string

	mu       sync.Mutex
	calls    []Call
	pulls    []Pull
	fail     Fail
	branches map[string]bool // nil: every branch exists
	// Reset is when the simulated rate limit lifts.
	reset time.Time
}

// New starts a Server accepting token; it stops when the test ends.
func New(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{token: token, reset: time.Now().Add(17 * time.Minute).Truncate(time.Second)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// SetFail makes later pull-request calls fail so (None: answer normally).
func (s *Server) SetFail(f Fail) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

// SetBranches declares the branches the repositories have; a head or base
// not among them is refused as GitHub does. Without a call, every branch
// exists.
func (s *Server) SetBranches(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.branches = map[string]bool{}
	for _, n := range names {
		s.branches[n] = true
	}
}

// RateLimitReset is when the simulated rate limit lifts.
func (s *Server) RateLimitReset() time.Time { return s.reset }

// AddPull stores an open pull request (e.g. one opened earlier by hand)
// and returns its number.
func (s *Server) AddPull(p Pull) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Number = len(s.pulls) + 1
	p.Open = true
	if p.HeadLabel == "" {
		p.HeadLabel = p.Owner + ":" + p.Head
	}
	s.pulls = append(s.pulls, p)
	return p.Number
}

// Calls returns the calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Pulls returns the pull requests held.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Pull(nil), s.pulls...)
}

// PullURL is the html_url the Server gives pull request n of owner/repo.
func (s *Server) PullURL(owner, repo string, n int) string {
	return fmt.Sprintf("%s/%s/%s/pull/%d", s.URL, owner, repo, n)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Call{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	if auth := c.Header.Get("Authorization"); auth != "" {
		scheme, cred, _ := strings.Cut(auth, " ")
		c.TokenOK = s.token != "" && cred == s.token && (scheme == "Bearer" || scheme == "token")
		c.Header.Set("Authorization", scheme+" "+Redacted)
	}
	s.calls = append(s.calls, c)

	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Resource", "core")
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(s.reset.Unix(), 10))
	if !c.TokenOK || (s.fail == Unauthorized && r.Method == http.MethodPost) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{
			"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"})
		return
	}
	// GitHub Enterprise Server serves the same API under /api/v3.
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v3"), "/"), "/")
	if len(parts) != 4 || parts[0] != "repos" || parts[3] != "pulls" {
		notFound(w)
		return
	}
	owner, repo := parts[1], parts[2]
	switch r.Method {
	case http.MethodPost:
		s.create(w, owner, repo, body)
	case http.MethodGet:
		s.list(w, r, owner, repo)
	default:
		notFound(w)
	}
}

type validation struct {
	Resource string `json:"resource"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func invalid(w http.ResponseWriter, errs ...validation) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "errors": errs,
		"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"})
}

func (s *Server) create(w http.ResponseWriter, owner, repo string, body []byte) {
	switch s.fail {
	case RateLimited, RateLimited403:
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Used", "5000")
		status := http.StatusTooManyRequests
		if s.fail == RateLimited403 {
			status = http.StatusForbidden
		}
		writeJSON(w, status, map[string]string{
			"message":           "API rate limit exceeded for user ID 1.",
			"documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api", "status": strconv.Itoa(status)})
		return
	case Forbidden:
		writeJSON(w, http.StatusForbidden, map[string]string{
			"message":           "Resource not accessible by personal access token",
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "403"})
		return
	}
	w.Header().Set("X-RateLimit-Remaining", "4999")
	var in struct {
		Title *string `json:"title"`
		Body  string  `json:"body"`
		Head  *string `json:"head"`
		Base  *string `json:"base"`
		Draft bool    `json:"draft"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON", "status": "400"})
		return
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", in.Title}, {"head", in.Head}, {"base", in.Base}} {
		if f.v == nil || *f.v == "" {
			invalid(w, validation{Resource: "PullRequest", Field: f.name, Code: "missing_field"})
			return
		}
	}
	label := *in.Head
	branch := label
	if _, b, ok := strings.Cut(label, ":"); ok {
		branch = b
	} else {
		label = owner + ":" + label
	}
	if s.fail == NoHead || (s.branches != nil && !s.branches[branch]) {
		invalid(w, validation{Resource: "PullRequest", Field: "head", Code: "invalid"})
		return
	}
	if s.branches != nil && !s.branches[*in.Base] {
		invalid(w, validation{Resource: "PullRequest", Field: "base", Code: "invalid"})
		return
	}
	exists := s.fail == Exists
	for _, p := range s.pulls {
		if p.Open && p.Owner == owner && p.Repo == repo && p.HeadLabel == label && p.Base == *in.Base {
			exists = true
		}
	}
	if exists {
		invalid(w, validation{Resource: "PullRequest", Code: "custom", Message: "A pull request already exists for " + label + "."})
		return
	}
	p := Pull{Owner: owner, Repo: repo, Number: len(s.pulls) + 1, Title: *in.Title, Body: in.Body,
		Head: branch, HeadLabel: label, Base: *in.Base, Draft: in.Draft, Open: true}
	s.pulls = append(s.pulls, p)
	w.Header().Set("Location", fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, owner, repo, p.Number))
	writeJSON(w, http.StatusCreated, s.pullJSON(p))
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, owner, repo string) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	out := []map[string]any{}
	for _, p := range s.pulls {
		switch {
		case p.Owner != owner || p.Repo != repo:
		case q.Has("head") && q.Get("head") != p.HeadLabel:
		case q.Has("base") && q.Get("base") != p.Base:
		case state == "open" && !p.Open, state == "closed" && p.Open:
		default:
			out = append(out, s.pullJSON(p))
		}
	}
	w.Header().Set("X-RateLimit-Remaining", "4998")
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) pullJSON(p Pull) map[string]any {
	state := "open"
	if !p.Open {
		state = "closed"
	}
	api := fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, p.Owner, p.Repo, p.Number)
	ref := func(label, ref string) map[string]any {
		return map[string]any{"label": label, "ref": ref, "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
			"user": map[string]any{"login": strings.SplitN(label, ":", 2)[0]}}
	}
	return map[string]any{
		"url": api, "id": 1000 + p.Number, "node_id": "PR_kwDO" + strconv.Itoa(p.Number),
		"html_url":  s.PullURL(p.Owner, p.Repo, p.Number),
		"diff_url":  s.PullURL(p.Owner, p.Repo, p.Number) + ".diff",
		"issue_url": fmt.Sprintf("%s/repos/%s/%s/issues/%d", s.URL, p.Owner, p.Repo, p.Number),
		"number":    p.Number, "state": state, "locked": false, "title": p.Title, "body": p.Body,
		"user":       map[string]any{"login": p.Owner},
		"created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:01:12Z",
		"draft": p.Draft, "merged": false, "mergeable": nil,
		"head": ref(p.HeadLabel, p.Head), "base": ref(p.Owner+":"+p.Base, p.Base),
	}
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{
		"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
