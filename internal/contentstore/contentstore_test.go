package contentstore_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/internal/contentstore"
)

func TestPutStoresOnceAndReadsBack(t *testing.T) {
	t.Parallel()
	s, err := contentstore.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	h1, err := s.Put([]byte("report v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := s.Put([]byte("report v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if h1 != h2 || h1 != contentstore.HashOf([]byte("report v1\n")) {
		t.Fatalf("hashes %s %s", h1, h2)
	}
	ents, _ := os.ReadDir(s.Dir())
	if len(ents) != 1 || ents[0].Name() != h1 {
		t.Fatalf("the same content twice should be one file, got %v", ents)
	}
	b, err := s.Read(h1)
	if err != nil || string(b) != "report v1\n" {
		t.Fatalf("Read = %q, %v", b, err)
	}
	f, err := s.Open(h1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(f)
	_ = f.Close()
	if string(b) != "report v1\n" {
		t.Fatalf("Open read %q (not from offset 0?)", b)
	}
	if n, err := s.Size(h1); err != nil || n != 10 {
		t.Fatalf("Size = %d, %v", n, err)
	}
}

func TestTamperedContentIsRefusedAndRepairedByPut(t *testing.T) {
	t.Parallel()
	s, _ := contentstore.Open(t.TempDir())
	h, err := s.Put([]byte("the agent's version"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), h), []byte("someone else's ver"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(h); !errors.Is(err, contentstore.ErrCorrupt) {
		t.Fatalf("Open of a tampered content: %v, want ErrCorrupt", err)
	}
	if _, err := s.Read(h); !errors.Is(err, contentstore.ErrCorrupt) {
		t.Fatalf("Read of a tampered content: %v, want ErrCorrupt", err)
	}
	// Same length, wrong bytes: Put must not trust the name alone.
	if err := os.WriteFile(filepath.Join(s.Dir(), h), []byte("the agent's versioX"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put([]byte("the agent's version")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Read(h); err != nil || string(b) != "the agent's version" {
		t.Fatalf("after Put again: %q, %v", b, err)
	}
}

func TestNamesAreChecked(t *testing.T) {
	t.Parallel()
	s, _ := contentstore.Open(t.TempDir())
	for _, h := range []string{"", "../x", "ABCDEF", contentstore.HashOf(nil)[:63] + "G", "0123"} {
		if _, err := s.Open(h); !errors.Is(err, contentstore.ErrBadHash) {
			t.Errorf("Open(%q) = %v, want ErrBadHash", h, err)
		}
		if err := s.Remove(h); !errors.Is(err, contentstore.ErrBadHash) {
			t.Errorf("Remove(%q) = %v, want ErrBadHash", h, err)
		}
	}
	if _, err := s.Open(contentstore.HashOf([]byte("never put"))); !errors.Is(err, contentstore.ErrNotFound) {
		t.Errorf("Open of a missing content: %v, want ErrNotFound", err)
	}
}

func TestSweepKeepsWhatIsClaimedOnly(t *testing.T) {
	t.Parallel()
	s, _ := contentstore.Open(t.TempDir())
	keep, _ := s.Put([]byte("keep"))
	gone, _ := s.Put([]byte("gone!"))
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Dir(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), keep+".tmp-1"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	freed, err := s.Sweep(func(h string) bool { return h == keep })
	if err != nil {
		t.Fatal(err)
	}
	if freed != 5+4 {
		t.Errorf("freed %d bytes, want 9", freed)
	}
	ents, _ := os.ReadDir(s.Dir())
	if len(ents) != 1 || ents[0].Name() != keep {
		t.Fatalf("left %v", ents)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("Sweep reached through a symlink: %v", err)
	}
	if err := s.Remove(gone); err != nil {
		t.Fatalf("Remove of a missing content: %v", err)
	}
}

// TestPutReaderStreamsAndDedups: a streamed content lands under its hash,
// once; the same content again leaves no temporary file behind.
func TestPutReaderStreamsAndDedups(t *testing.T) {
	t.Parallel()
	s, _ := contentstore.Open(t.TempDir())
	data := bytes.Repeat([]byte("0123456789abcdef"), 70_000) // 1.1 MB
	for range 2 {
		h, n, err := s.PutReader(bytes.NewReader(data))
		if err != nil || h != contentstore.HashOf(data) || n != int64(len(data)) {
			t.Fatalf("PutReader = %s %d %v", h, n, err)
		}
	}
	ents, _ := os.ReadDir(s.Dir())
	if len(ents) != 1 {
		t.Fatalf("the folder holds %d entries, want the one content", len(ents))
	}
	if b, err := s.Read(contentstore.HashOf(data)); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("Read back: %d bytes, %v", len(b), err)
	}
}
