package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Remove deletes the regular file name, confined like WriteFile and under
// the same per-file write lock: check (as WriteOptions.Check) runs right
// before the removal with the current Info (ok false when the file does not
// exist), and an error from it leaves the file untouched. A missing file
// that check accepts is no error. Undo uses it to take back a file an
// agent created.
func (l *Local) Remove(name string, check func(current Info, ok bool) error) error {
	t, err := l.resolve(name)
	if err != nil {
		return err
	}
	if t.devNull() {
		return fmt.Errorf("%s: ferry does not remove devices: %w", name, ErrNotRegular)
	}
	if t.rel == "." {
		return fmt.Errorf("%s: %w", name, ErrIsDir)
	}
	defer writeLocks.lock(t.path)()
	cur, err := t.root.r.Lstat(t.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if check != nil {
			return check(Info{}, false)
		}
		return nil
	case err != nil:
		return l.mapErr(name, err)
	case cur.IsDir():
		return fmt.Errorf("%s: %w", name, ErrIsDir)
	case !cur.Mode().IsRegular():
		return servable(name, cur)
	}
	if _, links := sysStamp(cur); links > 1 {
		return hardLinkedError(name, links)
	}
	if check != nil {
		if err := check(t.info(cur), true); err != nil {
			return err
		}
	}
	if err := t.root.r.Remove(t.rel); err != nil {
		return l.mapErr(name, err)
	}
	syncDir(t.root.r, filepath.Dir(t.rel))
	return nil
}
