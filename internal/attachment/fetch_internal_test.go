package attachment

import (
	"errors"
	"testing"
)

// FuzzDataURL: decoding a data: URL never panics, never returns more than
// its limit, and never refuses as too large well-formed content within it
// (malformed base64 may be refused by its length before it is decoded).
func FuzzDataURL(f *testing.F) {
	for _, s := range []string{
		"data:,hello%20world", "data:text/plain;base64,aGk=", "data:;base64,", "data:image/png;base64,iVBORw0KGgo=",
		"data:text/plain;charset=\"x,no", "data:%zz", "data:,%", "data:text/plain;base64,!!",
	} {
		f.Add(s, int64(4))
	}
	f.Fuzz(func(t *testing.T, raw string, limit int64) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		data, _, err := decodeDataURL(raw, limit)
		if int64(len(data)) > limit {
			t.Fatalf("%q: %d bytes past the limit %d", raw, len(data), limit)
		}
		if errors.Is(err, ErrTooLarge) {
			if full, _, err := decodeDataURL(raw, 1<<30); err == nil && int64(len(full)) <= limit {
				t.Fatalf("%q: too large at %d, but it decodes to %d bytes (%v)", raw, limit, len(full), err)
			}
		}
	})
}
