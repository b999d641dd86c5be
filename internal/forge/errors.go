package forge

import (
	"fmt"
	"time"
)

// Stable codes of the *Error values this package returns.
const (
	// CodeUnknownForge: the remote names no forge ferry knows (a local
	// path, an unknown host, or a URL that is not a repository's). The
	// caller prints nothing or the remote itself.
	CodeUnknownForge = "unknown_forge"
	// CodeBadBranch: a branch name git itself would refuse.
	CodeBadBranch = "bad_branch"
	// CodeBadRequest: a pull request without owner, repository, title,
	// head or base.
	CodeBadRequest = "bad_request"
	// CodeNoToken: none of the token variables is set.
	CodeNoToken = "forge_no_token"
	// CodeAuth: the forge refused the token (HTTP 401, or 403 that is not
	// a rate limit).
	CodeAuth = "forge_auth"
	// CodeRepoNotFound: the forge has no such repository, or the token
	// cannot see it (GitHub answers 404 to both).
	CodeRepoNotFound = "forge_repo_not_found"
	// CodePullRequestExists: an open pull request for the branch already
	// exists; CreatePullRequest returns it alongside the error when the
	// forge names it.
	CodePullRequestExists = "pull_request_exists"
	// CodeBranchNotPushed: the forge does not have the head branch.
	CodeBranchNotPushed = "branch_not_pushed"
	// CodeBaseNotFound: the forge does not have the base branch.
	CodeBaseNotFound = "base_not_found"
	// CodeNoCommits: the head branch has nothing the base lacks.
	CodeNoCommits = "no_commits"
	// CodeRateLimited: the forge's rate limit is used up; RetryAt says
	// when to try again.
	CodeRateLimited = "forge_rate_limited"
	// CodeUnreachable: no answer from the forge (network, timeout, 5xx).
	CodeUnreachable = "forge_unreachable"
	// CodeForge: any other refusal; Message holds the forge's own words.
	CodeForge = "forge_error"
)

// Error is a coded failure. Message is safe to show to the user: it never
// holds the token, and text from the forge in it is cut short and cleaned of
// control characters. Err is the cause, for the log.
type Error struct {
	Code    string
	Message string
	// Status is the forge's HTTP status, where it answered.
	Status int
	// RetryAt is when a rate limit lifts (CodeRateLimited), zero if unknown.
	RetryAt time.Time
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("forge: %s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("forge: %s: %s", e.Code, e.Message)
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrX) match any *Error with that code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is; each matches every *Error of its code.
var (
	ErrUnknownForge      = &Error{Code: CodeUnknownForge}
	ErrBadBranch         = &Error{Code: CodeBadBranch}
	ErrBadRequest        = &Error{Code: CodeBadRequest}
	ErrNoToken           = &Error{Code: CodeNoToken}
	ErrAuth              = &Error{Code: CodeAuth}
	ErrRepoNotFound      = &Error{Code: CodeRepoNotFound}
	ErrPullRequestExists = &Error{Code: CodePullRequestExists}
	ErrBranchNotPushed   = &Error{Code: CodeBranchNotPushed}
	ErrBaseNotFound      = &Error{Code: CodeBaseNotFound}
	ErrNoCommits         = &Error{Code: CodeNoCommits}
	ErrRateLimited       = &Error{Code: CodeRateLimited}
	ErrUnreachable       = &Error{Code: CodeUnreachable}
	ErrForge             = &Error{Code: CodeForge}
)

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
