package master

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// TestFitLinks: a listing whose paths would make the answer too large for
// one message keeps the newest links that fit.
func TestFitLinks(t *testing.T) {
	msg := protocol.New(protocol.TypeArtifactsList, &protocol.ArtifactsList{})
	msg.SessionID = "s"
	links := make([]protocol.ArtifactLink, 1000)
	for i := range links {
		links[i] = protocol.ArtifactLink{Artifact: protocol.Artifact{TurnID: "t", ArtifactID: fmt.Sprintf("art_%d", i),
			Path: strings.Repeat("d/", 2000) + "f", FileName: "f", Size: 1}, DownloadURL: "/v1/artifacts/x",
			RegisteredAt: "2026-01-01T00:00:00Z", ExpiresAt: "2026-01-01T01:00:00Z"}
	}
	keep := fitLinks(msg, links)
	if keep == 0 || keep == len(links) {
		t.Fatalf("kept %d of %d links of about 4 KB each", keep, len(links))
	}
	ans := msg.Reply(protocol.TypeArtifacts, &protocol.Artifacts{Artifacts: links[len(links)-keep:]})
	if _, err := protocol.Encode(ans); err != nil {
		t.Fatalf("the kept links do not fit: %v", err)
	}
	if got := fitLinks(msg, links[:10]); got != 10 {
		t.Fatalf("a small list kept %d of 10", got)
	}
}
