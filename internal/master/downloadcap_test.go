package master_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// TestDownloadLinksCapped: every listing issues fresh links, so a UI that
// lists over and over (a reload loop, a script) could grow the store
// without bound. One UI token holds at most the cap: the oldest links go,
// the newest (those the UI just got) stay, another UI's are untouched.
func TestDownloadLinksCapped(t *testing.T) {
	defer master.SetMaxDownloadLinks(3)()
	e, ui, _, info, first := downloadSetup(t, master.Config{})
	ctx := testCtx(t)
	stored := func(l protocol.ArtifactLink) bool {
		_, err := e.st.DownloadTokenByHash(ctx, auth.Hash(strings.TrimPrefix(l.DownloadURL, "/v1/artifacts/")))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	secret, _, err := auth.Issue(ctx, e.st, store.TokenUI, "laptop", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other := e.dialUIToken(secret, "other")
	otherLinks := listArtifacts(other, info.ID, &protocol.ArtifactsList{}).Payload.(*protocol.Artifacts).Artifacts
	links := []protocol.ArtifactLink{first}
	for range 20 {
		got := listArtifacts(ui, info.ID, &protocol.ArtifactsList{}).Payload.(*protocol.Artifacts).Artifacts
		if len(got) != 1 {
			t.Fatalf("a listing gave %d links", len(got))
		}
		links = append(links, got[0])
	}
	n := 0
	for _, l := range links {
		if stored(l) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d of the UI's %d links are stored, want the cap, 3", n, len(links))
	}
	for _, l := range links[len(links)-3:] {
		if !stored(l) {
			t.Errorf("a link of the newest listings was dropped: %s", l.DownloadURL)
		}
	}
	for _, l := range otherLinks {
		if !stored(l) {
			t.Error("another UI's link went with this UI's cap")
		}
	}
}
