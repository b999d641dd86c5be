// Package privatetest checks, for tests, that what ferry keeps under a
// folder is the user's alone: every folder 0700 and every file 0600.
package privatetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Tree fails t for every folder under dir (dir included) that is not
// 0700 and every file that is not 0600, and returns how many files it saw.
func Tree(t testing.TB, dir string) (files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return files
}
