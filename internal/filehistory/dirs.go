package filehistory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// Where histories live. A state directory holds history/: the client's
// (one journal per UI session) and ferry's own ($XDG_STATE_HOME/ferry: the
// journals of ferry run, beside ferry mcp's per-file Store) share the
// layout <state>/history/<session>/, so one reader (ferry undo) serves
// both.

// ErrBadSession is a session id that cannot name a history folder (empty,
// too long, or with characters other than letters, digits, '-' and '_',
// such as a path separator or "..").
var ErrBadSession = errors.New("file history: a session id is 1 to 64 letters, digits, '-' or '_'")

var safeSession = lazyregexp.New(`^[A-Za-z0-9_-]{1,64}$`)

// SessionDir is the folder of session's journal under stateDir:
// stateDir/history/session. A session id that is not a plain name is
// refused (ErrBadSession), so the folder never lies outside history/.
func SessionDir(stateDir, session string) (string, error) {
	if !safeSession.MatchString(session) {
		return "", fmt.Errorf("%w, not %q", ErrBadSession, session)
	}
	return filepath.Join(stateDir, "history", session), nil
}

// JournalDir is the folder of any session's journal under stateDir: the
// SessionDir of a plain id, else a folder named by the id's hash (a
// session id from the wire may hold any character; the folder never lies
// outside history/).
func JournalDir(stateDir, session string) string {
	if dir, err := SessionDir(stateDir, session); err == nil {
		return dir
	}
	sum := sha256.Sum256([]byte(session))
	return filepath.Join(stateDir, "history", hex.EncodeToString(sum[:16]))
}

// DefaultStateDir is ferry's own state folder, $XDG_STATE_HOME/ferry, else
// $HOME/.local/state/ferry, reading the environment through getenv (nil:
// os.Getenv). Its history/ is DefaultDir.
func DefaultStateDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ferry"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the home folder for file history: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "ferry"), nil
}

// HasJournal reports whether dir holds a journal (without creating one,
// as OpenJournal would).
func HasJournal(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "journal.jsonl"))
	return err == nil && fi.Mode().IsRegular()
}
