// Package sqlitefile opens ferry's SQLite files (modernc.org/sqlite): the
// master's database and the client's transcripts, outbox and artifact log.
// Every SQLite file ferry opens goes through Open (a test of this package
// fails on any other sql.Open of the driver in the module).
//
// Guarantees:
//
//   - The database file is 0600 from the moment it exists, whatever the
//     umask and the folder's mode: Open creates it itself before SQLite
//     sees it (SQLite would create it 0644 less the umask). SQLite creates
//     its -wal, -shm and -journal files with the database file's mode, so
//     they are 0600 too.
//   - A file an older ferry left with group or other permission bits (the
//     database, its -wal, -shm or -journal) is tightened to 0600 on Open,
//     before SQLite reads it. A -wal, -shm or -journal that is not a
//     regular file (a symbolic link) is refused, never followed.
//   - Missing parent folders are created 0700. An existing folder keeps its
//     mode: it may be the user's own (a --state DIR made with mkdir), and
//     the files in it are private all the same.
package sqlitefile

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Perm is the mode of every SQLite file ferry keeps; DirPerm that of a
// folder it creates for one.
const (
	Perm    fs.FileMode = 0o600
	DirPerm fs.FileMode = 0o700
)

// companions are the files SQLite keeps beside a database.
var companions = []string{"-wal", "-shm", "-journal"}

// Open prepares the database at path (see Prepare) and opens it with the
// driver's query parameters q (_pragma, _txlock, ...; nil for none). The
// handle is not pinged: the first statement opens the file.
func Open(path string, q url.Values) (*sql.DB, error) {
	abs, err := Prepare(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", DSN(abs, q))
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return db, nil
}

// Prepare makes path ready for SQLite and returns it absolute: missing
// parent folders are created 0700, the file is created 0600 when missing,
// and the file and its -wal, -shm and -journal are tightened to 0600 when
// they have looser bits.
func Prepare(path string) (string, error) {
	if path == "" {
		return "", errors.New("sqlite: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sqlite %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), DirPerm); err != nil {
		return "", fmt.Errorf("sqlite %s: %w", path, err)
	}
	// A new file gets exactly Perm, which even an odd umask (one that
	// takes the owner's bits) cannot change; an existing one is tightened.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, Perm) //nolint:gosec // the path is ferry's own state or the operator's choice
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(abs, os.O_RDWR, 0) //nolint:gosec // as above
	}
	if err != nil {
		return "", fmt.Errorf("sqlite %s: %w", path, err)
	}
	if created {
		err = f.Chmod(Perm)
	} else {
		err = tighten(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("sqlite %s: %w", path, err)
	}
	for _, suffix := range companions {
		if err := tightenCompanion(abs + suffix); err != nil {
			return "", fmt.Errorf("sqlite %s: %w", path, err)
		}
	}
	return abs, nil
}

// tighten takes the group and other bits off f (by its descriptor, so a
// name swapped meanwhile is not what changes).
func tighten(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", f.Name())
	}
	if fi.Mode().Perm()&^Perm == 0 {
		return nil
	}
	return f.Chmod(fi.Mode().Perm() & Perm)
}

// tightenCompanion tightens the -wal, -shm or -journal name when it
// exists.
func tightenCompanion(name string) error {
	fi, err := os.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%v); remove it", name, fi.Mode().Type())
	case fi.Mode().Perm()&^Perm == 0:
		return nil
	}
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow, 0) //nolint:gosec // a companion of ferry's own database
	if err != nil {
		return err
	}
	err = tighten(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// DSN is the driver's URI for the absolute path abs: the path is escaped so
// that '?', '#' and '%' in a file name stay part of it.
func DSN(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}
