package fuzzy

import (
	"fmt"
	"math"
	"strings"
)

// List is a ready Source: the paths concatenated in one string (an arena)
// with a 4-byte end offset and an 8-byte mask per path, 12 bytes per path
// beyond the text. It is immutable once built.
type List struct {
	text  string
	ends  []uint32
	masks []uint64
}

// NewList builds a List of paths, in order. It fails when the paths add up
// to 4 GiB or more.
func NewList(paths []string) (*List, error) {
	total := 0
	for _, p := range paths {
		total += len(p)
	}
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("fuzzy: %d bytes of paths exceed the 4 GiB arena", total)
	}
	var b strings.Builder
	b.Grow(total)
	l := &List{ends: make([]uint32, len(paths)), masks: make([]uint64, len(paths))}
	for i, p := range paths {
		b.WriteString(p)
		l.ends[i] = uint32(b.Len()) //nolint:gosec // bounded by the check above
		l.masks[i] = MaskOf(p)
	}
	l.text = b.String()
	return l, nil
}

// Len returns the number of paths.
func (l *List) Len() int { return len(l.ends) }

// Path returns path i, a substring of the arena (no copy).
func (l *List) Path(i int) string {
	start := uint32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.text[start:l.ends[i]]
}

// Mask returns MaskOf(Path(i)), computed when the list was built.
func (l *List) Mask(i int) uint64 { return l.masks[i] }

// RunAt returns the whole list as one run.
func (l *List) RunAt(int) Run { return Run{Text: l.text, Ends: l.ends, Masks: l.masks} }

var _ RunSource = (*List)(nil)
