// Package forge knows the code forges a workspace's remote may live on:
// it tells the forge and repository from a git remote URL, builds the
// forge's "new pull request" page for a branch, and opens a pull request
// through GitHub's REST API.
//
// Guarantees:
//
//   - ParseRemote reads every remote form git accepts for a forge
//     (https/http, ssh://, git://, scp-like user@host:path), for GitHub,
//     GitLab (subgroups too), Codeberg and Bitbucket, and for GitHub
//     Enterprise, GitLab or Gitea hosts given in Config. Anything else is a
//     coded unknown_forge error. Credentials in a remote URL are dropped:
//     they appear in no Repo, URL or error.
//   - A Repo's owner and name hold only [A-Za-z0-9._-] (never "." or
//     ".."), so the URLs built from them stay on the forge's host; branch
//     names are refused unless git would accept them, and are
//     percent-escaped in every URL (a "/" in a branch stays a "/" in a
//     path, "#", "%", "?" and non-ASCII are escaped).
//   - GitHub.CreatePullRequest makes one POST /repos/{o}/{r}/pulls (and,
//     when the branch already has an open pull request, one GET to find
//     it), with a timeout, reading at most a bounded number of bytes of
//     each answer. Every failure is an *Error with a stable code.
//   - The token goes only into the Authorization header: it is never
//     logged, and never part of an error (text from the forge is
//     scrubbed of it too). TokenFromEnv names the variable it used, never
//     the value.
package forge
