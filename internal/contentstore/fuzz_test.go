package contentstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/contentstore"
)

// FuzzNames: whatever name is asked for, the store never reaches outside
// its folder: a name that is not a lowercase hex SHA-256 is ErrBadHash, and
// a valid one that was never put is ErrNotFound.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "../secret", "/etc/passwd", contentstore.HashOf([]byte("x")), "ABC", "..", "a/b"} {
		f.Add(s)
	}
	parent := f.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("secret"), 0o600); err != nil {
		f.Fatal(err)
	}
	s, err := contentstore.Open(filepath.Join(parent, "blobs"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string) {
		_, err := s.Read(name)
		switch {
		case !contentstore.ValidHash(name) && !errors.Is(err, contentstore.ErrBadHash):
			t.Fatalf("Read(%q) = %v, want ErrBadHash", name, err)
		case contentstore.ValidHash(name) && !errors.Is(err, contentstore.ErrNotFound):
			t.Fatalf("Read(%q) = %v, want ErrNotFound", name, err)
		}
		if err := s.Remove(name); contentstore.ValidHash(name) != (err == nil) {
			t.Fatalf("Remove(%q) = %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(parent, "secret")); err != nil {
			t.Fatalf("a file outside the store is gone after %q: %v", name, err)
		}
	})
}
