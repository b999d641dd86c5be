package protocol

import (
	"reflect"
	"strings"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// Isolated sessions (issue 34): a session started with an Isolation runs
// in a git worktree of its own, on a new branch ferry/NAME, under its
// client's state folder; the user's checkout is never touched. The UI (or
// the master) asks the session's client, through the master, for the
// branch's diff and status, a proposed commit message, a ship (commit,
// merge into the base, push, pull request), an update from the base, a
// run of the workspace's test script, and the master alone for the
// worktree's removal. Answers marked stored below are session events the
// master keeps and relays to every subscriber; the others are replies to
// the asking UI only (parent_id set).
const (
	TypeWorktreeDiff        = "control.worktree.diff"
	TypeWorktreeStatus      = "control.worktree.status"
	TypeWorktreePropose     = "control.worktree.propose"
	TypeWorktreeShip        = "control.worktree.ship"
	TypeWorktreeUpdate      = "control.worktree.update"
	TypeWorktreeAbortUpdate = "control.worktree.abort_update"
	TypeWorktreeTest        = "control.worktree.test"
	TypeWorktreeRemove      = "control.worktree.remove"

	TypeWorktreeDiffAnswer = "session.worktree.diff"
	TypeWorktreeState      = "session.worktree.status"
	TypeWorktreeSetup      = "session.worktree.setup"
	TypeWorktreeProposal   = "session.worktree.proposal"
	TypeWorktreeShipped    = "session.worktree.shipped"
	TypeWorktreeConflict   = "session.worktree.conflict"
	TypeWorktreeTested     = "session.worktree.tested"
	TypeWorktreeRemoved    = "session.worktree.removed"
)

// Error codes of isolated sessions. The git ones are the codes of the
// client's git layer, passed on as they are.
const (
	CodeNotGitRepository = "not_a_git_repository"
	CodeDetachedHead     = "detached_head"
	CodeBaseNotFound     = "base_not_found"
	CodeBranchExists     = "branch_exists"
	CodeBaseDirty        = "base_dirty"
	CodeMergeConflict    = "merge_conflict"
	CodePushRejected     = "push_rejected"
	CodeRemoteNotFound   = "remote_not_found"
	CodeNothingToCommit  = "nothing_to_commit"
	CodeNothingToMerge   = "nothing_to_merge"
	CodeNotFastForward   = "not_fast_forward"
	CodeUncommitted      = "uncommitted_changes"
	CodeSetupFailed      = "setup_failed"
	CodeWorktreeMissing  = "worktree_missing"
	CodeUnshippedChanges = "unshipped_changes"
	CodeForgeAuth        = "forge_auth"
	CodeForgeError       = "forge_error"
	CodeNotIsolated      = "not_isolated"
	CodeGitFailed        = "git_failed"
	CodeMachineOffline   = "machine_offline"
)

// Limits and defaults of isolated sessions.
const (
	MaxWorktreeName      = 40
	MaxWorktreeMessage   = 64 << 10
	MaxWorktreeOutput    = 64 << 10
	WorktreeBranchPrefix = "ferry/"
	DefaultShipStrategy  = "squash"
	DefaultShipRemote    = "origin"
)

// Setup states (Worktree.Setup, WorktreeSetup.State).
const (
	SetupNone    = "none"
	SetupRunning = "running"
	SetupOK      = "ok"
	SetupFailed  = "failed"
)

// Test results (Worktree.Test).
const (
	TestNone   = "none"
	TestPassed = "passed"
	TestFailed = "failed"
)

// Ship strategies (WorktreeShip.Strategy, ShipResult.Strategy).
const (
	StrategyNone   = "none"
	StrategyFF     = "ff"
	StrategySquash = "squash"
	StrategyMerge  = "merge"
)

var worktreeNameRE = lazyregexp.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func init() {
	for code, meaning := range map[string]string{
		CodeNotGitRepository: "the workspace is not in a git repository; an isolated session needs one (git init, then commit)",
		CodeDetachedHead:     "the workspace's checkout has a detached HEAD; check out a branch or name a base",
		CodeBaseNotFound:     "the base branch does not exist; name an existing branch",
		CodeBranchExists:     "the branch ferry/NAME already exists; choose another name",
		CodeBaseDirty:        "the user's checkout of the base has uncommitted changes the merge would touch; commit or stash them first",
		CodeMergeConflict:    "the merge conflicts in the files named; update the worktree from the base and resolve them",
		CodePushRejected:     "the remote rejected the push; the message says why",
		CodeRemoteNotFound:   "the remote named does not exist in the repository",
		CodeNothingToCommit:  "there is nothing to commit",
		CodeNothingToMerge:   "the branch has nothing the base has not",
		CodeNotFastForward:   "a fast-forward is impossible: the base moved on; squash, merge or update first",
		CodeUncommitted:      "the worktree has uncommitted changes; commit them first",
		CodeSetupFailed:      "the workspace's .ferry/setup failed in the new worktree; its output says why",
		CodeWorktreeMissing:  "the session's worktree folder is gone (removed by hand); its branch is kept",
		CodeUnshippedChanges: "the session's worktree has unshipped changes; ship them, or set discard",
		CodeForgeAuth:        "the forge refused the token; give a token with pull-request rights",
		CodeForgeError:       "the forge failed to open the pull request; the message says why",
		CodeNotIsolated:      "the session is not isolated: it has no worktree",
		CodeGitFailed:        "git is missing, too old, or one of its steps failed; the message says which",
		CodeMachineOffline:   "the session's machine is offline; the step needs it (retry when it is back)",
	} {
		ErrorCodes[code] = meaning
	}
	ui := RoleMaster | RoleUI
	registry[TypeWorktreeDiff] = spec{reflect.TypeFor[WorktreeDiffRequest](), ui, true, false, "ask for an isolated session's whole branch diff against its base"}
	registry[TypeWorktreeStatus] = spec{reflect.TypeFor[WorktreeStatusRequest](), ui, true, false, "ask for an isolated session's worktree status"}
	registry[TypeWorktreePropose] = spec{reflect.TypeFor[WorktreePropose](), ui, true, false, "ask for a commit message for an isolated session's changes"}
	registry[TypeWorktreeShip] = spec{reflect.TypeFor[WorktreeShip](), ui, true, false, "commit, merge into the base, push and open a pull request"}
	registry[TypeWorktreeUpdate] = spec{reflect.TypeFor[WorktreeUpdate](), ui, true, false, "merge the base into the worktree"}
	registry[TypeWorktreeAbortUpdate] = spec{reflect.TypeFor[WorktreeAbortUpdate](), ui, true, false, "undo an update from the base left with conflicts"}
	registry[TypeWorktreeTest] = spec{reflect.TypeFor[WorktreeTest](), ui, true, false, "run the workspace's .ferry/test in the worktree"}
	registry[TypeWorktreeRemove] = spec{reflect.TypeFor[WorktreeRemove](), RoleMaster, true, false, "remove an isolated session's worktree"}
	registry[TypeWorktreeDiffAnswer] = spec{reflect.TypeFor[WorktreeDiff](), RoleClient, true, true, "an isolated session's branch diff against its base"}
	registry[TypeWorktreeState] = spec{reflect.TypeFor[WorktreeState](), RoleClient, true, false, "an isolated session's worktree as it is now"}
	registry[TypeWorktreeSetup] = spec{reflect.TypeFor[WorktreeSetup](), RoleClient, true, false, "the workspace's .ferry/setup runs, succeeded or failed in the worktree"}
	registry[TypeWorktreeProposal] = spec{reflect.TypeFor[WorktreeProposal](), RoleClient, true, true, "a proposed commit message"}
	registry[TypeWorktreeShipped] = spec{reflect.TypeFor[WorktreeShipped](), RoleClient, true, true, "a ship succeeded"}
	registry[TypeWorktreeConflict] = spec{reflect.TypeFor[WorktreeConflict](), RoleClient, true, true, "a merge or update conflicts, or the base checkout is dirty, in the files named"}
	registry[TypeWorktreeTested] = spec{reflect.TypeFor[WorktreeTested](), RoleClient, true, true, "the result of the workspace's .ferry/test"}
	registry[TypeWorktreeRemoved] = spec{reflect.TypeFor[WorktreeRemoved](), RoleClient, true, true, "the worktree was removed"}
}

// Isolation asks for an isolated session (ui.session.start,
// control.session.open): a git worktree on a new branch ferry/NAME.
type Isolation struct {
	// Base is the branch to start from; absent: the workspace's current branch.
	Base string `json:"base,omitempty" jsonschema:"maxLength=256"`
	// Name of the worktree (branch ferry/NAME): lower-case letters, digits and single dashes. Absent: made from the title, unique, by the client. A name given is insisted on (branch_exists when taken); the master sends the name the client chose on every re-open.
	Name string `json:"name,omitempty" jsonschema:"maxLength=40,pattern=^[a-z0-9]+(-[a-z0-9]+)*$"`
	// Group is a best-of-N group id (a UUID the UI makes): sessions sharing it are compared.
	Group string `json:"group,omitempty" jsonschema:"maxLength=64,pattern=^[A-Za-z0-9-]+$"`
}

func (p *Isolation) validate(field string) *Error {
	if p == nil || p.Base == "" {
		return nil
	}
	return CheckBranch(field+".base", p.Base)
}

// CheckBranch refuses a branch name git would refuse or read as an
// option: a leading '-', whitespace or a control character, "..", "@{",
// any of ~^:?*[\, a part starting with '.' or ending in ".lock", a
// leading, trailing or doubled '/'.
func CheckBranch(field, name string) *Error {
	bad := ""
	switch {
	case name == "" || name == "@":
		bad = "is not a branch name"
	case strings.HasPrefix(name, "-"):
		bad = "may not start with '-'"
	case strings.ContainsAny(name, " \t\n\r~^:?*[\\\x7f") || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 }) >= 0:
		bad = "may not contain whitespace, control characters or any of ~^:?*[\\"
	case strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//"):
		bad = "may not contain \"..\", \"@{\" or \"//\""
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, "."):
		bad = "may not start or end with '/' or end with '.'"
	}
	if bad == "" {
		for _, part := range strings.Split(name, "/") {
			if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
				bad = "no part may start with '.' or end with \".lock\""
				break
			}
		}
	}
	if bad != "" {
		return errorf(CodeInvalidValue, field, "%q %s", truncate(name), bad)
	}
	return nil
}

// ValidWorktreeName reports whether name is a worktree name as Isolation
// takes it.
func ValidWorktreeName(name string) bool {
	return len(name) <= MaxWorktreeName && worktreeNameRE.MatchString(name)
}

// Worktree is an isolated session's worktree as its client last reported it.
type Worktree struct {
	// Name of the worktree.
	Name string `json:"name" jsonschema:"minLength=1,maxLength=40,pattern=^[a-z0-9]+(-[a-z0-9]+)*$"`
	// Branch is ferry/NAME.
	Branch string `json:"branch" jsonschema:"minLength=1,maxLength=256"`
	// Base is the branch it started from and ships into.
	Base string `json:"base" jsonschema:"minLength=1,maxLength=256"`
	// Group is the best-of-N group id, if any.
	Group string `json:"group,omitempty" jsonschema:"maxLength=64,pattern=^[A-Za-z0-9-]+$"`
	// Added and Removed lines, and Files changed: the whole branch against its merge base with the base, committed, uncommitted and untracked (not ignored) together.
	Added   int `json:"added" jsonschema:"minimum=0"`
	Removed int `json:"removed" jsonschema:"minimum=0"`
	Files   int `json:"files" jsonschema:"minimum=0"`
	// Ahead counts the branch's commits the base has not; Behind the base's commits the branch has not.
	Ahead  int `json:"ahead" jsonschema:"minimum=0"`
	Behind int `json:"behind" jsonschema:"minimum=0"`
	// Uncommitted is set when the worktree has changes not committed yet.
	Uncommitted bool `json:"uncommitted"`
	// Unshipped is set when the branch has commits not in the base, or uncommitted changes: archiving or deleting the session then needs discard.
	Unshipped bool `json:"unshipped"`
	// Missing is set when the worktree's folder was removed by hand: the session can be read, not prompted.
	Missing bool `json:"missing,omitempty"`
	// Setup is the state of the workspace's .ferry/setup in this worktree (none: the workspace has none).
	Setup string `json:"setup" jsonschema:"enum=none,enum=running,enum=ok,enum=failed"`
	// Test is the result of the last .ferry/test run (absent: never run).
	Test string `json:"test,omitempty" jsonschema:"enum=none,enum=passed,enum=failed"`
	// Shipped is the last successful ship, if any.
	Shipped *ShipResult `json:"shipped,omitempty"`
}

// ShipResult is what a ship did.
type ShipResult struct {
	// Commit is the commit made on the branch from its uncommitted changes (absent: nothing was uncommitted).
	Commit string `json:"commit,omitempty" jsonschema:"maxLength=64"`
	// Strategy the branch was merged into the base with (none: not merged).
	Strategy string `json:"strategy" jsonschema:"enum=none,enum=ff,enum=squash,enum=merge"`
	// Merged is set when the base now has the branch's changes; MergeCommit is the base's new head.
	Merged      bool   `json:"merged"`
	MergeCommit string `json:"merge_commit,omitempty" jsonschema:"maxLength=64"`
	// Pushed is set when the branch was pushed to Remote.
	Pushed bool   `json:"pushed"`
	Remote string `json:"remote,omitempty" jsonschema:"maxLength=256"`
	// PRURL is the pull request opened (or found open); CompareURL the forge's page to open one by hand.
	PRURL      string `json:"pr_url,omitempty" jsonschema:"maxLength=2048"`
	CompareURL string `json:"compare_url,omitempty" jsonschema:"maxLength=2048"`
}

// BranchFileDiff is one file of an isolated session's branch diff
// (session.worktree.diff).
type BranchFileDiff struct {
	// Path relative to the repository's top.
	Path string `json:"path" jsonschema:"minLength=1,maxLength=4096"`
	// OldPath is a renamed or copied file's former path.
	OldPath string `json:"old_path,omitempty" jsonschema:"maxLength=4096"`
	// Status of the file.
	Status string `json:"status" jsonschema:"enum=added,enum=modified,enum=deleted,enum=renamed,enum=copied,enum=type_changed"`
	// Added and Removed lines (0 for a binary file).
	Added   int `json:"added" jsonschema:"minimum=0"`
	Removed int `json:"removed" jsonschema:"minimum=0"`
	// Binary is set for a binary file (no patch).
	Binary bool `json:"binary,omitempty"`
	// Patch is the file's unified diff, cut where Truncated says.
	Patch string `json:"patch,omitempty" jsonschema:"maxLength=262144"`
	// Truncated is set when the patch was cut (or left out) to keep the answer small.
	Truncated bool `json:"truncated,omitempty"`
}

// WorktreeDiffRequest is control.worktree.diff, answered by
// session.worktree.diff.
type WorktreeDiffRequest struct{}

// WorktreeStatusRequest is control.worktree.status, answered by
// session.worktree.status.
type WorktreeStatusRequest struct{}

// WorktreePropose is control.worktree.propose, answered by
// session.worktree.proposal.
type WorktreePropose struct{}

// WorktreeUpdate is control.worktree.update: merge the base into the
// worktree. Answered by session.worktree.status, or by
// session.worktree.conflict naming the files left with conflict markers.
type WorktreeUpdate struct{}

// WorktreeAbortUpdate is control.worktree.abort_update: undo an update
// left with conflicts. Answered by session.worktree.status.
type WorktreeAbortUpdate struct{}

// WorktreeTest is control.worktree.test, answered by
// session.worktree.tested.
type WorktreeTest struct{}

// WorktreeShip is control.worktree.ship: commit what is uncommitted, merge
// into the base (unless strategy none), push the branch (push), open a
// pull request (pull_request). Answered by session.worktree.shipped, or an
// error with the failing step's code (and, for merge_conflict and
// base_dirty, a session.worktree.conflict first).
type WorktreeShip struct {
	// Message of the commit of uncommitted changes, and of a squash or merge commit; required when there is something to commit or squash. At most 64 KiB.
	Message string `json:"message,omitempty" jsonschema:"maxLength=65536"`
	// Strategy to merge into the base with; none: do not merge.
	Strategy string `json:"strategy,omitempty" jsonschema:"enum=none,enum=ff,enum=squash,enum=merge,default=squash"`
	// Push the branch to Remote.
	Push bool `json:"push,omitempty"`
	// Remote to push to.
	Remote string `json:"remote,omitempty" jsonschema:"maxLength=256,pattern=^[A-Za-z0-9][A-Za-z0-9._/-]*$,default=origin"`
	// PullRequest opens a pull request from the pushed branch into the base (GitHub, with the client's forge token), else gives the forge's compare URL.
	PullRequest bool `json:"pull_request,omitempty"`
}

func (p *WorktreeShip) validate() *Error {
	if len(p.Message) > MaxWorktreeMessage {
		return errorf(CodeInvalidValue, "payload.message", "is %d bytes, at most %d allowed", len(p.Message), MaxWorktreeMessage)
	}
	return nil
}

// WorktreeRemove is control.worktree.remove (master → client only), sent
// before an isolated session is archived or deleted; answered by
// session.worktree.removed.
type WorktreeRemove struct {
	// KeepBranch keeps the branch ferry/NAME (the default of archive and delete).
	KeepBranch bool `json:"keep_branch,omitempty"`
}

// WorktreeDiff is session.worktree.diff.
type WorktreeDiff struct {
	// Files changed, by path.
	Files []BranchFileDiff `json:"files" jsonschema:"maxItems=100000"`
	// Counts are the branch's totals, as in session.worktree.status.
	Counts Worktree `json:"counts"`
	// Truncated is set when patches were left out to keep the answer small.
	Truncated bool `json:"truncated,omitempty"`
}

// WorktreeState is session.worktree.status (stored): sent by the client
// after the session opens, after setup, after every turn that ended, after
// a ship, update or test, and as the answer to control.worktree.status.
type WorktreeState struct {
	// Worktree as it is now.
	Worktree Worktree `json:"worktree"`
}

// WorktreeSetup is session.worktree.setup (stored): the workspace's
// .ferry/setup in the new worktree.
type WorktreeSetup struct {
	// State is running (output so far), ok or failed.
	State string `json:"state" jsonschema:"enum=running,enum=ok,enum=failed"`
	// Output is the script's output (stdout and stderr in order), its last 64 KiB.
	Output string `json:"output,omitempty" jsonschema:"maxLength=65536"`
	// ExitCode of the script, when it exited.
	ExitCode *int `json:"exit_code,omitempty"`
}

// WorktreeProposal is session.worktree.proposal: a commit message made of
// the session's prompts and its agent's final answers.
type WorktreeProposal struct {
	Message string `json:"message" jsonschema:"maxLength=65536"`
}

// WorktreeShipped is session.worktree.shipped (stored).
type WorktreeShipped struct {
	// Result of the ship.
	Result ShipResult `json:"result"`
	// Worktree as it is after it.
	Worktree Worktree `json:"worktree"`
}

// WorktreeConflict is session.worktree.conflict: the files a merge
// conflicts in (merge_conflict), an update left with conflict markers
// (merge_conflict), or the base checkout's uncommitted files the merge
// would touch (base_dirty).
type WorktreeConflict struct {
	// Files relative to the repository's top.
	Files []string `json:"files" jsonschema:"maxItems=10000"`
	// Base branch.
	Base string `json:"base" jsonschema:"maxLength=256"`
	// Code is merge_conflict or base_dirty.
	Code string `json:"code" jsonschema:"enum=merge_conflict,enum=base_dirty"`
}

// WorktreeTested is session.worktree.tested (stored).
type WorktreeTested struct {
	// Ran is false when the workspace has no .ferry/test.
	Ran bool `json:"ran"`
	// Passed is set when the script exited 0.
	Passed bool `json:"passed"`
	// ExitCode of the script, when it exited.
	ExitCode *int `json:"exit_code,omitempty"`
	// Output is its last 64 KiB.
	Output string `json:"output,omitempty" jsonschema:"maxLength=65536"`
}

// WorktreeRemoved is session.worktree.removed.
type WorktreeRemoved struct {
	// Branch is the session's branch; BranchKept says whether it is still there.
	Branch     string `json:"branch" jsonschema:"maxLength=256"`
	BranchKept bool   `json:"branch_kept"`
}
