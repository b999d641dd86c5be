// Package contentstore keeps file contents by their SHA-256, in one folder:
// the file history's journals keep the contents a change replaced in one,
// and the client keeps the artifacts' snapshots in another.
//
// Guarantees:
//
//   - A content is stored under the lowercase hex SHA-256 of its bytes, and
//     only once: putting the same content again writes nothing.
//   - Put returns only once the content is on disk: written to a temporary
//     file in the folder, fsynced, then renamed into place, so a crash
//     leaves either the whole content under its name or none (a leftover
//     temporary file is removed by Sweep).
//   - Reading checks the hash: Read and Open fail with ErrCorrupt when the
//     bytes stored no longer hash to their name, so a damaged or tampered
//     content is never handed out as the one put.
//   - Names are checked (ErrBadHash): no other name reaches the file
//     system, and every access goes through an os.Root on the folder, so
//     nothing outside it is read or removed.
//
// A Store does no reference counting: which contents are still needed is
// its caller's to know (Remove, Sweep). One Store per folder at a time.
package contentstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

var (
	// ErrBadHash means the name given is not a lowercase hex SHA-256.
	ErrBadHash = errors.New("contentstore: not a SHA-256 in lowercase hex")
	// ErrCorrupt means the stored bytes no longer hash to their name.
	ErrCorrupt = errors.New("contentstore: the stored content does not match its hash")
	// ErrNotFound means there is no content under that hash.
	ErrNotFound = errors.New("contentstore: no such content")
)

// Store is a folder of contents named by their hash.
type Store struct {
	dir string
}

// Open opens (creating it, mode 0700) the store in dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("contentstore: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// HashOf is the name a content is stored under.
func HashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ValidHash reports whether h can name a content.
func ValidHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := range len(h) {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Store) root() (*os.Root, error) {
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("contentstore: %w", err)
	}
	return r, nil
}

// Put stores b and returns its hash; a content stored already (and
// intact) is not written again.
func (s *Store) Put(b []byte) (string, error) {
	h := HashOf(b)
	r, err := s.root()
	if err != nil {
		return "", err
	}
	defer func() { _ = r.Close() }()
	if fi, err := r.Lstat(h); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(b)) {
		// Stored already; a damaged copy is replaced below.
		if f, err := r.Open(h); err == nil {
			ok := check(f, h) == nil
			_ = f.Close()
			if ok {
				return h, nil
			}
		}
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails on supported platforms
	tmp := h + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("contentstore: %w", err)
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = r.Remove(tmp)
		return "", fmt.Errorf("contentstore: %w", err)
	}
	if err := r.Rename(tmp, h); err != nil {
		_ = r.Remove(tmp)
		return "", fmt.Errorf("contentstore: %w", err)
	}
	return h, nil
}

// PutReader stores what r yields, streamed (never all in memory), and
// returns its hash and size; a content stored already (and intact) is
// kept, and the copy just written dropped.
func (s *Store) PutReader(src io.Reader) (string, int64, error) {
	r, err := s.root()
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = r.Close() }()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails on supported platforms
	tmp := "put.tmp-" + hex.EncodeToString(rnd[:])
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, fmt.Errorf("contentstore: %w", err)
	}
	d := sha256.New()
	n, werr := io.Copy(io.MultiWriter(f, d), src)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = r.Remove(tmp)
		return "", 0, fmt.Errorf("contentstore: %w", err)
	}
	h := hex.EncodeToString(d.Sum(nil))
	if fi, err := r.Lstat(h); err == nil && fi.Mode().IsRegular() && fi.Size() == n {
		if g, err := r.Open(h); err == nil {
			ok := check(g, h) == nil
			_ = g.Close()
			if ok {
				_ = r.Remove(tmp)
				return h, n, nil
			}
		}
	}
	if err := r.Rename(tmp, h); err != nil {
		_ = r.Remove(tmp)
		return "", 0, fmt.Errorf("contentstore: %w", err)
	}
	return h, n, nil
}

// Size is the size of the content stored under h.
func (s *Store) Size(h string) (int64, error) {
	if !ValidHash(h) {
		return 0, fmt.Errorf("%w: %q", ErrBadHash, h)
	}
	r, err := s.root()
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.Close() }()
	fi, err := r.Lstat(h)
	if err != nil {
		return 0, notFound(h, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: %s is not a regular file", ErrNotFound, h)
	}
	return fi.Size(), nil
}

// Open opens the content stored under h, checked: the whole content is
// read and hashed first (ErrCorrupt when it does not match), and the file
// returned is at offset 0. The caller closes it.
func (s *Store) Open(h string) (*os.File, error) {
	if !ValidHash(h) {
		return nil, fmt.Errorf("%w: %q", ErrBadHash, h)
	}
	r, err := s.root()
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	f, err := r.Open(h)
	if err != nil {
		return nil, notFound(h, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s is not a regular file", ErrNotFound, h)
	}
	if err == nil {
		err = check(f, h)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func check(f *os.File, h string) error {
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return fmt.Errorf("contentstore: read %s: %w", h, err)
	}
	if hex.EncodeToString(d.Sum(nil)) != h {
		return fmt.Errorf("%w: %s", ErrCorrupt, h)
	}
	return nil
}

// Read returns the content stored under h, checked like Open.
func (s *Store) Read(h string) ([]byte, error) {
	f, err := s.Open(h)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("contentstore: read %s: %w", h, err)
	}
	if HashOf(b) != h { // changed since Open checked it
		return nil, fmt.Errorf("%w: %s", ErrCorrupt, h)
	}
	return b, nil
}

// Remove deletes the content stored under h; one that is not there is no
// error.
func (s *Store) Remove(h string) error {
	if !ValidHash(h) {
		return fmt.Errorf("%w: %q", ErrBadHash, h)
	}
	r, err := s.root()
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	if err := r.Remove(h); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("contentstore: %w", err)
	}
	return nil
}

// Sweep removes every entry of the folder that keep does not claim: the
// contents no longer needed, temporary files a crash left, and anything
// else put there (a symlink is removed, never followed). It returns the
// bytes removed.
func (s *Store) Sweep(keep func(hash string) bool) (int64, error) {
	r, err := s.root()
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.Close() }()
	ents, err := fs.ReadDir(r.FS(), ".")
	if err != nil {
		return 0, fmt.Errorf("contentstore: %w", err)
	}
	var freed int64
	var errs []error
	for _, d := range ents {
		name := d.Name()
		if ValidHash(name) && keep(name) {
			continue
		}
		var size int64
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		if err := r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		freed += size
	}
	if err := errors.Join(errs...); err != nil {
		return freed, fmt.Errorf("contentstore: sweep: %w", err)
	}
	return freed, nil
}

func notFound(h string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, h)
	}
	return fmt.Errorf("contentstore: %w", err)
}
