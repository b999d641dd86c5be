package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/version"
)

// DefaultGitHubAPI is github.com's REST API.
const DefaultGitHubAPI = "https://api.github.com"

// apiVersion is the REST API version the requests and answers follow.
const apiVersion = "2022-11-28"

const (
	// DefaultTimeout bounds each call when the context has no earlier
	// deadline.
	DefaultTimeout = 30 * time.Second
	// maxBody bounds what is read of an answer: a pull request's JSON is
	// a few KB, an open-pulls list of one head a few more.
	maxBody = 1 << 20
	// maxMessage bounds the forge's own words quoted in an error.
	maxMessage = 300
)

// tokenScopes is what a token needs, said where GitHub refuses one (the
// names of permissions, no credential).
const tokenScopes = "a fine-grained token needs the repository's \"Pull requests: read and write\" and \"Contents: read\" permissions; a classic token needs the \"repo\" scope (\"public_repo\" for a public repository)" //nolint:gosec // G101: permission names, not a credential

// GitHub is a client of GitHub's (or GitHub Enterprise Server's) REST API.
type GitHub struct {
	// BaseURL is the API's base: DefaultGitHubAPI when empty,
	// https://HOST/api/v3 for GitHub Enterprise Server (Repo.APIURL).
	BaseURL string
	Token   string
	// TokenSource names where Token came from (TokenFromEnv's source),
	// for messages; "the GitHub token" when empty.
	TokenSource string
	// HTTPClient is http.DefaultClient when nil; each call is bounded by
	// Timeout whatever the client's own timeout.
	HTTPClient *http.Client
	// Timeout bounds each call (DefaultTimeout when zero).
	Timeout time.Duration
	// Logger gets one debug line per request (method, path, status,
	// duration), never a header or the token. Nil: no log.
	Logger *slog.Logger
}

// PR is a pull request to open.
type PR struct {
	Owner, Repo string
	Title, Body string
	// Head is the branch with the changes ("owner:branch" for another
	// fork); Base the branch to merge into.
	Head, Base string
	Draft      bool
}

// PullRequest is an opened (or already open) pull request.
type PullRequest struct {
	Number int
	// URL is the pull request's web page.
	URL string
}

// pullJSON is the part of GitHub's pull-request object ferry reads.
type pullJSON struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
}

// errorJSON is GitHub's error body: {"message": …, "errors": [{resource,
// field, code, message}], "documentation_url": …}.
type errorJSON struct {
	Message string `json:"message"`
	Errors  []struct {
		Resource string `json:"resource"`
		Field    string `json:"field"`
		Code     string `json:"code"`
		Message  string `json:"message"`
	} `json:"errors"`
}

// CreatePullRequest opens a pull request (POST /repos/{o}/{r}/pulls).
// When the head branch already has an open one, the error is
// pull_request_exists and, if GitHub lists it, the existing pull request
// is returned with it.
func (g GitHub) CreatePullRequest(ctx context.Context, pr PR) (PullRequest, error) {
	if err := g.check(pr); err != nil {
		return PullRequest{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout())
	defer cancel()
	body, err := json.Marshal(map[string]any{
		"title": pr.Title, "body": pr.Body, "head": pr.Head, "base": pr.Base, "draft": pr.Draft,
	})
	if err != nil {
		return PullRequest{}, fmt.Errorf("forge: encode pull request: %w", err)
	}
	path := "/repos/" + pr.Owner + "/" + pr.Repo + "/pulls"
	status, hdr, data, err := g.do(ctx, http.MethodPost, path, nil, body)
	if err != nil {
		return PullRequest{}, err
	}
	if status == http.StatusCreated || status == http.StatusOK {
		var p pullJSON
		if err := json.Unmarshal(data, &p); err != nil || p.Number <= 0 || p.HTMLURL == "" {
			return PullRequest{}, &Error{Code: CodeForge, Status: status,
				Message: "GitHub answered the new pull request with a body ferry cannot read", Err: err}
		}
		return PullRequest{Number: p.Number, URL: p.HTMLURL}, nil
	}
	e := g.failure(status, hdr, data, pr)
	if e.Code == CodePullRequestExists {
		if existing, ok := g.findOpen(ctx, pr); ok {
			e.Message = fmt.Sprintf("an open pull request for %s already exists: %s", printable(pr.Head), existing.URL)
			return existing, e
		}
	}
	return PullRequest{}, e
}

func (g GitHub) check(pr PR) error {
	for _, f := range []struct{ name, v string }{{"owner", pr.Owner}, {"repository", pr.Repo}} {
		if !validSegment(f.v) {
			return errorf(CodeBadRequest, "the pull request's %s %q is not a GitHub name", f.name, printable(f.v))
		}
	}
	if strings.TrimSpace(pr.Title) == "" {
		return errorf(CodeBadRequest, "the pull request has no title")
	}
	head := pr.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !validSegment(owner) {
			return errorf(CodeBadRequest, "the head's owner %q is not a GitHub name", printable(owner))
		}
		head = branch
	}
	if err := checkBranch("head", head); err != nil {
		return err
	}
	if err := checkBranch("base", pr.Base); err != nil {
		return err
	}
	if g.Token == "" {
		return errorf(CodeNoToken, "no GitHub token: set %s to a token that may write pull requests", TokenVars[0])
	}
	if strings.ContainsFunc(g.Token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errorf(CodeAuth, "%s holds a space or control character; copy the token again", g.tokenName())
	}
	return nil
}

// FindPullRequest looks up the open pull request of pr's head into its
// base (one GET /repos/{o}/{r}/pulls; pr's Title and Body are not used):
// found is false when there is none. A refusal is coded as for
// CreatePullRequest, so a caller can check the token (forge_auth) and the
// repository (forge_repo_not_found) before a step it cannot take back,
// such as a push.
func (g GitHub) FindPullRequest(ctx context.Context, pr PR) (_ PullRequest, found bool, _ error) {
	if strings.TrimSpace(pr.Title) == "" {
		pr.Title = "lookup" // check's rule for a new pull request
	}
	if err := g.check(pr); err != nil {
		return PullRequest{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout())
	defer cancel()
	status, hdr, data, err := g.do(ctx, http.MethodGet, "/repos/"+pr.Owner+"/"+pr.Repo+"/pulls", g.openQuery(pr), nil)
	if err != nil {
		return PullRequest{}, false, err
	}
	if status != http.StatusOK {
		return PullRequest{}, false, g.failure(status, hdr, data, pr)
	}
	var list []pullJSON
	if err := json.Unmarshal(data, &list); err != nil {
		return PullRequest{}, false, &Error{Code: CodeForge, Status: status, Message: "GitHub answered the pull-request lookup with a body ferry cannot read", Err: err}
	}
	if len(list) == 0 || list[0].Number <= 0 || list[0].HTMLURL == "" {
		return PullRequest{}, false, nil
	}
	return PullRequest{Number: list[0].Number, URL: list[0].HTMLURL}, true, nil
}

func (g GitHub) openQuery(pr PR) url.Values {
	head := pr.Head
	if !strings.Contains(head, ":") {
		head = pr.Owner + ":" + head
	}
	return url.Values{"head": {head}, "base": {pr.Base}, "state": {"open"}}
}

// findOpen looks up the open pull request of pr's head into its base.
func (g GitHub) findOpen(ctx context.Context, pr PR) (PullRequest, bool) {
	status, _, data, err := g.do(ctx, http.MethodGet, "/repos/"+pr.Owner+"/"+pr.Repo+"/pulls", g.openQuery(pr), nil)
	if err != nil || status != http.StatusOK {
		return PullRequest{}, false
	}
	var list []pullJSON
	if json.Unmarshal(data, &list) != nil || len(list) == 0 || list[0].Number <= 0 || list[0].HTMLURL == "" {
		return PullRequest{}, false
	}
	return PullRequest{Number: list[0].Number, URL: list[0].HTMLURL}, true
}

// do makes one API call; err is set only when GitHub did not answer.
func (g GitHub) do(ctx context.Context, method, path string, query url.Values, body []byte) (int, http.Header, []byte, error) {
	base := strings.TrimSuffix(g.BaseURL, "/")
	if base == "" {
		base = DefaultGitHubAPI
	}
	u, err := url.Parse(base + path)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		// The base is configuration; it is not echoed (it could carry
		// credentials in a userinfo part).
		return 0, nil, nil, errorf(CodeUnreachable, "the GitHub API URL is not an http(s) URL of a host")
	}
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, nil, nil, &Error{Code: CodeUnreachable, Message: "cannot build the GitHub request", Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+g.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", "ferry/"+version.String())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := g.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		g.log(ctx, method, u.Path, 0, start, err)
		msg := "GitHub did not answer at " + u.Host
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "GitHub did not answer in time at " + u.Host
		}
		return 0, nil, nil, &Error{Code: CodeUnreachable, Message: msg, Err: g.scrubErr(err)}
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	g.log(ctx, method, u.Path, resp.StatusCode, start, err)
	if err != nil {
		return 0, nil, nil, &Error{Code: CodeUnreachable, Status: resp.StatusCode, Message: "GitHub's answer was cut off", Err: g.scrubErr(err)}
	}
	if len(data) > maxBody {
		return 0, nil, nil, &Error{Code: CodeForge, Status: resp.StatusCode, Message: "GitHub's answer is larger than ferry reads"}
	}
	return resp.StatusCode, resp.Header, data, nil
}

// failure maps a refusal to a coded error.
func (g GitHub) failure(status int, hdr http.Header, data []byte, pr PR) *Error {
	var ej errorJSON
	_ = json.Unmarshal(data, &ej)
	said := g.said(ej.Message)
	e := &Error{Status: status}
	if at, limited := rateLimit(status, hdr, ej.Message); limited {
		e.Code, e.RetryAt = CodeRateLimited, at
		e.Message = "GitHub's rate limit for this token is used up"
		if !at.IsZero() {
			e.Message += fmt.Sprintf("; it resets at %s (in %s)", at.UTC().Format("15:04:05 UTC"), time.Until(at).Round(time.Second))
		} else {
			e.Message += "; wait a minute before trying again"
		}
		return e
	}
	switch {
	case status == http.StatusUnauthorized:
		e.Code = CodeAuth
		e.Message = fmt.Sprintf("GitHub refused %s (HTTP 401: %s): it is wrong, expired or revoked; %s", g.tokenName(), said, tokenScopes)
	case status == http.StatusForbidden:
		e.Code = CodeAuth
		e.Message = fmt.Sprintf("GitHub does not let %s open pull requests on %s/%s (HTTP 403: %s); %s", g.tokenName(), pr.Owner, pr.Repo, said, tokenScopes)
	case status == http.StatusNotFound:
		e.Code = CodeRepoNotFound
		e.Message = fmt.Sprintf("GitHub has no repository %s/%s that %s can see; check the remote, and that the token may reach it (%s)", pr.Owner, pr.Repo, g.tokenName(), tokenScopes)
	case status == http.StatusUnprocessableEntity:
		return g.invalid(e, ej, pr)
	case status >= 500:
		e.Code = CodeUnreachable
		e.Message = fmt.Sprintf("GitHub failed (HTTP %d: %s); try again later", status, said)
	default:
		e.Code = CodeForge
		e.Message = fmt.Sprintf("GitHub refused the pull request (HTTP %d: %s)", status, said)
	}
	return e
}

// invalid reads a 422 "Validation Failed": each entry of errors names a
// field (head, base) or, for code "custom", says what in its message.
func (g GitHub) invalid(e *Error, ej errorJSON, pr PR) *Error {
	for _, v := range ej.Errors {
		msg := strings.ToLower(v.Message)
		switch {
		case strings.Contains(msg, "pull request already exists"):
			e.Code = CodePullRequestExists
			e.Message = fmt.Sprintf("an open pull request for %s already exists on %s/%s", printable(pr.Head), pr.Owner, pr.Repo)
			return e
		case strings.Contains(msg, "no commits between"):
			e.Code = CodeNoCommits
			e.Message = fmt.Sprintf("%s has no commits that %s lacks: nothing to open a pull request for", printable(pr.Head), printable(pr.Base))
			return e
		case v.Field == "head":
			e.Code = CodeBranchNotPushed
			e.Message = fmt.Sprintf("GitHub has no branch %s on %s/%s: push it first", printable(pr.Head), pr.Owner, pr.Repo)
			return e
		case v.Field == "base":
			e.Code = CodeBaseNotFound
			e.Message = fmt.Sprintf("GitHub has no base branch %s on %s/%s", printable(pr.Base), pr.Owner, pr.Repo)
			return e
		}
	}
	parts := []string{g.said(ej.Message)}
	for _, v := range ej.Errors {
		parts = append(parts, g.said(strings.Trim(v.Field+" "+v.Code+" "+v.Message, " ")))
	}
	e.Code = CodeForge
	e.Message = fmt.Sprintf("GitHub refused the pull request (HTTP 422: %s)", strings.Join(parts, "; "))
	return e
}

// rateLimit tells a rate-limit refusal (403 or 429 with no requests left,
// or a secondary limit with retry-after) and when it lifts.
func rateLimit(status int, hdr http.Header, message string) (time.Time, bool) {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return time.Time{}, false
	}
	if s := hdr.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			return time.Now().Add(time.Duration(n) * time.Second), true
		}
	}
	if hdr.Get("X-Ratelimit-Remaining") == "0" {
		if n, err := strconv.ParseInt(hdr.Get("X-Ratelimit-Reset"), 10, 64); err == nil && n > 0 {
			return time.Unix(n, 0), true
		}
		return time.Time{}, true
	}
	if status == http.StatusTooManyRequests || strings.Contains(strings.ToLower(message), "rate limit") {
		return time.Time{}, true
	}
	return time.Time{}, false
}

// said is the forge's own message made safe to show: without the token,
// without control characters, cut short.
func (g GitHub) said(s string) string {
	s = g.scrub(s)
	if s == "" {
		return "no message"
	}
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return printable(s)
}

func (g GitHub) scrub(s string) string {
	if g.Token == "" {
		return s
	}
	return strings.ReplaceAll(s, g.Token, "[redacted]")
}

// scrubErr keeps err for errors.Is/As unless its text holds the token
// (it should not: the token is only in a header), then flattens it.
func (g GitHub) scrubErr(err error) error {
	if g.Token != "" && strings.Contains(err.Error(), g.Token) {
		return errors.New(g.scrub(err.Error()))
	}
	return err
}

func (g GitHub) tokenName() string {
	if g.TokenSource != "" {
		return "the token in " + g.TokenSource
	}
	return "the GitHub token"
}

func (g GitHub) timeout() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return DefaultTimeout
}

func (g GitHub) log(ctx context.Context, method, path string, status int, start time.Time, err error) {
	if g.Logger == nil {
		return
	}
	attrs := []slog.Attr{slog.String("method", method), slog.String("path", path),
		slog.Int("status", status), slog.Duration("took", time.Since(start))}
	if err != nil {
		attrs = append(attrs, slog.String("err", g.scrub(err.Error())))
	}
	g.Logger.LogAttrs(ctx, slog.LevelDebug, "forge: github request", attrs...)
}
