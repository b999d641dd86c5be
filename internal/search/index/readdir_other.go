//go:build !linux

package index

import "os"

// readDirents reads a directory with the os package.
func readDirents(name string, b *dirBatch) ([]dirent, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]dirent, len(es))
	for i, e := range es {
		out[i] = dirent{name: e.Name(), typ: e.Type(), batch: b}
	}
	return out, nil
}
