package index

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/internal/ignore"
)

// listFS is the file system a listing walks: the OS's, with directory
// entries that carry the batch of their directory, so the walk's callback
// files what it finds without a lock or a map lookup (the entries of one
// directory are all handled by the goroutine that read it).
type listFS struct{ l *lister }

// dirent is a directory entry of a listing.
type dirent struct {
	name  string
	typ   fs.FileMode // type bits only
	batch *dirBatch   // the batch of the directory holding the entry
}

func (d *dirent) Name() string               { return d.name }
func (d *dirent) IsDir() bool                { return d.typ.IsDir() }
func (d *dirent) Type() fs.FileMode          { return d.typ }
func (d *dirent) Info() (fs.FileInfo, error) { return os.Lstat(filepath.Join(d.batch.abs, d.name)) }
func (d *dirent) String() string             { return fs.FormatDirEntry(d) }

// ReadDir lists a directory sorted by name and registers its batch.
func (f listFS) ReadDir(name string) ([]fs.DirEntry, error) {
	l := f.l
	l.read.Add(1)
	b := &dirBatch{abs: name}
	ents, err := readDirents(name, b)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(x, y dirent) int { return strings.Compare(x.name, y.name) })
	out := make([]fs.DirEntry, len(ents))
	for i := range ents {
		out[i] = &ents[i]
	}
	rel, _ := relPath(l.root, name)
	l.mu.Lock()
	l.batches[rel] = b
	l.mu.Unlock()
	return out, nil
}

// ReadFile reads an ignore file.
func (listFS) ReadFile(name string) ([]byte, error) { return ignore.OS().ReadFile(name) }
