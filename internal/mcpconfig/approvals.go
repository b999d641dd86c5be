package mcpconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ApprovalsFile is the approvals' file name in ferry's state folder.
const ApprovalsFile = "mcp-approvals.json"

// Decision is the user's say on one content of a workspace's .mcp.json.
type Decision string

const (
	// Unknown is not asked yet (or "not now").
	Unknown Decision = ""
	// Approved lets its servers start.
	Approved Decision = "approved"
	// Never starts them never, and asks no more, for this content.
	Never Decision = "never"
)

// maxPerWorkspace bounds the decisions kept for one workspace (the
// oldest go first).
const maxPerWorkspace = 32

// Approvals is the user's decisions on workspace .mcp.json files, kept in
// one JSON file. It is safe for concurrent use within a process; across
// processes the last write wins (a decision lost so is asked again).
type Approvals struct {
	path string
	mu   sync.Mutex
}

// OpenApprovals uses the file at path (created at the first Set).
func OpenApprovals(path string) *Approvals { return &Approvals{path: path} }

// Path is the approvals file.
func (a *Approvals) Path() string { return a.path }

type approvalsDoc struct {
	Version int `json:"version"`
	// Workspaces maps a canonical workspace path to its decisions.
	Workspaces map[string][]record `json:"workspaces"`
}

type record struct {
	SHA256   string   `json:"sha256"`
	Decision Decision `json:"decision"`
	At       string   `json:"at"`
}

// Sum is the key of a file's content.
func Sum(content []byte) string {
	s := sha256.Sum256(content)
	return hex.EncodeToString(s[:])
}

// Decision returns the decision on content sum of workspace's file.
func (a *Approvals) Decision(workspace, sum string) (Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	doc, err := a.read()
	if err != nil {
		return Unknown, err
	}
	for _, r := range doc.Workspaces[workspace] {
		if r.SHA256 == sum {
			return r.Decision, nil
		}
	}
	return Unknown, nil
}

// Set records d on content sum of workspace's file (Unknown forgets it).
func (a *Approvals) Set(workspace, sum string, d Decision) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	doc, err := a.read()
	if err != nil {
		return err
	}
	rs := slices.DeleteFunc(slices.Clone(doc.Workspaces[workspace]), func(r record) bool { return r.SHA256 == sum })
	if d != Unknown {
		rs = append(rs, record{SHA256: sum, Decision: d, At: time.Now().UTC().Format(time.RFC3339)})
	}
	if len(rs) > maxPerWorkspace {
		rs = rs[len(rs)-maxPerWorkspace:]
	}
	if len(rs) == 0 {
		delete(doc.Workspaces, workspace)
	} else {
		doc.Workspaces[workspace] = rs
	}
	return a.write(doc)
}

func (a *Approvals) fail(what string, err error) error {
	return &Error{Code: CodeApprovals, Path: a.path, Reason: what + ": " + err.Error(), Err: err}
}

// read loads the file; a missing one is empty, a damaged one an error
// (never overwritten: the user's other decisions are in it).
func (a *Approvals) read() (approvalsDoc, error) {
	doc := approvalsDoc{Version: 1, Workspaces: map[string][]record{}}
	b, err := os.ReadFile(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, a.fail("cannot read the approvals", err)
	}
	if len(b) > 16*MaxFileSize {
		return doc, a.fail("cannot read the approvals", errors.New("the file is too large"))
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return doc, a.fail("the approvals file is damaged; fix or remove it", err)
	}
	if doc.Version != 1 {
		return doc, a.fail("cannot read the approvals", fmt.Errorf("unknown version %d", doc.Version))
	}
	if doc.Workspaces == nil {
		doc.Workspaces = map[string][]record{}
	}
	return doc, nil
}

// write replaces the file atomically, 0600 in a 0700 folder.
func (a *Approvals) write(doc approvalsDoc) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return a.fail("cannot encode the approvals", err)
	}
	dir := filepath.Dir(a.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return a.fail("cannot make the state folder", err)
	}
	f, err := os.CreateTemp(dir, ApprovalsFile+".*.tmp")
	if err != nil {
		return a.fail("cannot write the approvals", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return a.fail("cannot write the approvals", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return a.fail("cannot write the approvals", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return a.fail("cannot write the approvals", err)
	}
	if err := f.Close(); err != nil {
		return a.fail("cannot write the approvals", err)
	}
	if err := os.Rename(tmp, a.path); err != nil {
		return a.fail("cannot write the approvals", err)
	}
	ok = true
	return nil
}
