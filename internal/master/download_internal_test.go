package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// TestStreamBoundsItsQueue: a download buffers at most its window; a
// client that sends more (or any data before the range) fails the
// download once what it queued is written, instead of growing memory.
func TestStreamBoundsItsQueue(t *testing.T) {
	id := protocol.NewID()
	chunk := func(off int64) []byte {
		f, err := protocol.AppendArtifactChunk(nil, protocol.ArtifactChunk{RequestID: id, Offset: off, Data: make([]byte, protocol.ArtifactChunkSize)})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctx := context.Background()
	st := &stream{wake: make(chan struct{}, 1)}
	st.deliver(chunk(0))
	if _, err := st.next(ctx, time.Second); !errors.Is(err, errOverflow) {
		t.Fatalf("data before the range: %v, want errOverflow", err)
	}

	st = &stream{wake: make(chan struct{}, 1)}
	st.setWindow(2 * protocol.ArtifactChunkSize)
	for i := range 3 {
		st.deliver(chunk(int64(i) * protocol.ArtifactChunkSize))
	}
	for i := range 2 {
		it, err := st.next(ctx, time.Second)
		if err != nil || it.chunk.Offset != int64(i)*protocol.ArtifactChunkSize {
			t.Fatalf("queued chunk %d: %+v, %v", i, it.chunk.Offset, err)
		}
	}
	if _, err := st.next(ctx, time.Second); !errors.Is(err, errOverflow) {
		t.Fatalf("past the window: %v, want errOverflow", err)
	}
	// Within the window, taking frames makes room for more.
	st = &stream{wake: make(chan struct{}, 1)}
	st.setWindow(protocol.ArtifactChunkSize)
	for i := range 10 {
		st.deliver(chunk(int64(i) * protocol.ArtifactChunkSize))
		if _, err := st.next(ctx, time.Second); err != nil {
			t.Fatalf("chunk %d within the window: %v", i, err)
		}
	}
	st.deliver([]byte(`{"type":"nonsense"}`))
	if _, err := st.next(ctx, time.Second); err == nil {
		t.Fatal("a frame that is neither a message of the download nor data was accepted")
	}
}

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
