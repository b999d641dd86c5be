package claudecode

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// stateVersion is the version of a session record; a record of another
// version is ignored (the session then starts a new conversation).
const stateVersion = 1

// record is what ferry keeps per session so that it resumes the same
// Claude Code conversation after a restart.
type record struct {
	Version         int    `json:"version"`
	FerrySessionID  string `json:"ferry_session_id"`
	ClaudeSessionID string `json:"claude_session_id"`
	// Workspace is where the conversation lives: Claude Code keeps its
	// conversations per working directory, so a record for another
	// workspace cannot be resumed.
	Workspace string `json:"workspace"`
}

// store keeps records as one small JSON file per ferry session under
// dir/sessions, written atomically (temp file, fsync, rename).
// With dir "" it keeps them in memory only.
type store struct {
	dir string

	mu  sync.Mutex
	mem map[string]record
}

func newStore(stateDir string) *store {
	st := &store{mem: map[string]record{}}
	if stateDir != "" {
		st.dir = filepath.Join(stateDir, "sessions")
	}
	return st
}

// plainName is a session id usable as a file name as it is.
var plainName = lazyregexp.New(`^[A-Za-z0-9_-]{1,128}$`)

// path is the record file of a ferry session: its id, or a hash of it when
// the id is not a plain name.
func (st *store) path(ferryID string) string {
	name := ferryID
	if !plainName.MatchString(name) {
		sum := sha256.Sum256([]byte(ferryID))
		name = "h-" + hex.EncodeToString(sum[:16])
	}
	return filepath.Join(st.dir, name+".json")
}

// load returns the record of a ferry session, if there is a usable one.
func (st *store) load(ferryID string) (record, bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dir == "" {
		r, ok := st.mem[ferryID]
		return r, ok, nil
	}
	b, err := os.ReadFile(st.path(ferryID))
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("claudecode: read session state: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, false, fmt.Errorf("claudecode: session state %s: %w", st.path(ferryID), err)
	}
	if r.Version != stateVersion || r.FerrySessionID != ferryID || r.ClaudeSessionID == "" {
		return record{}, false, nil
	}
	return r, true, nil
}

// save writes the record of a ferry session.
func (st *store) save(r record) error {
	r.Version = stateVersion
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dir == "" {
		st.mem[r.FerrySessionID] = r
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("claudecode: encode session state: %w", err)
	}
	return writeAtomic(st.path(r.FerrySessionID), append(b, '\n'))
}

// remove forgets the record of a ferry session.
func (st *store) remove(ferryID string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dir == "" {
		delete(st.mem, ferryID)
		return nil
	}
	if err := os.Remove(st.path(ferryID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("claudecode: remove session state: %w", err)
	}
	return nil
}

// writeAtomic writes data to path so that a reader (or a crash) sees the
// old file or the new one, never a part: a temp file in the same directory,
// fsync, rename, fsync of the directory.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("claudecode: state directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("claudecode: write state: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("claudecode: write state: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("claudecode: write state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("claudecode: write state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("claudecode: write state: %w", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil { //nolint:gosec // the state directory
		_ = d.Sync() // the rename is durable once the directory is
		_ = d.Close()
	}
	return nil
}
