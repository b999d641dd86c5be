// Ordering a search's files newest first, and keeping only the newest n.

package tools

import "sort"

// newestFiles keeps the n most recently modified files seen, in memory
// proportional to n.
type newestFiles struct {
	n     int
	files []searchFile
}

func newNewestFiles(n int) *newestFiles { return &newestFiles{n: n} }

func (t *newestFiles) add(f searchFile) {
	t.files = append(t.files, f)
	if len(t.files) >= 2*t.n+64 {
		t.trim()
	}
}

func (t *newestFiles) trim() {
	sortSearchFiles(t.files)
	if len(t.files) > t.n {
		clear(t.files[t.n:])
		t.files = t.files[:t.n]
	}
}

func (t *newestFiles) sorted() []searchFile {
	t.trim()
	return t.files
}

// sortSearchFiles orders files newest first, ties by path.
func sortSearchFiles(files []searchFile) {
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if !a.modTime.Equal(b.modTime) {
			return a.modTime.After(b.modTime)
		}
		return a.display < b.display
	})
}
