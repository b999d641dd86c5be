package upload

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
)

// FuzzGrant: a grant is accepted only when it is exactly one this service
// signed for the upload; anything else is refused without a panic.
func FuzzGrant(f *testing.F) {
	s := &Service{cfg: Config{Key: bytes.Repeat([]byte("k"), 32), Now: func() time.Time { return time.Unix(1000, 0) }}}
	u := store.Upload{ID: "upl_a", SessionID: "s1"}
	good := s.sign(u.ID, u.SessionID, "msg", 2000)
	for _, g := range []string{good, "v1.2000.bXNn.", "v1...", "v2.2000.bXNn.AAAA", good + ".x", "v1.-1.bXNn.AAAA",
		strings.Replace(good, ".2000.", ".02000.", 1), strings.Replace(good, ".2000.", ".+2000.", 1)} {
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, g string) {
		err := s.verify(g, u)
		if err == nil && g != good {
			t.Fatalf("accepted a grant it did not sign: %q", g)
		}
	})
}
