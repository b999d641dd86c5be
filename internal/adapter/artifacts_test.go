package adapter_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/protocol"
)

func TestEmitArtifact(t *testing.T) {
	t.Parallel()
	f, err := artifact.New("out/a.csv", 12, artifact.WithMimeType("text/csv"), artifact.WithToolUseID("toolu_9"))
	if err != nil {
		t.Fatal(err)
	}
	var got []*protocol.Artifact
	emit := func(_ context.Context, typ string, payload any) error {
		if typ != protocol.TypeArtifact {
			t.Fatalf("type %q", typ)
		}
		got = append(got, payload.(*protocol.Artifact))
		return nil
	}
	for range 2 {
		if err := adapter.EmitArtifact(t.Context(), emit, "turn-1", f); err != nil {
			t.Fatal(err)
		}
	}
	a := got[0]
	if a.TurnID != "turn-1" || a.Path != "out/a.csv" || a.FileName != "a.csv" || a.Size != 12 || a.MimeType != "text/csv" || a.ToolUseID != "toolu_9" || !strings.HasPrefix(a.ArtifactID, "art_") {
		t.Fatalf("event %+v", a)
	}
	if got[1].ArtifactID == a.ArtifactID {
		t.Fatal("two emits share an artifact id")
	}
	// A cancelled turn still tells the user of the file, within a grace.
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	err = adapter.EmitArtifact(cancelled, func(ctx context.Context, _ string, _ any) error { return ctx.Err() }, "t", f)
	if err != nil {
		t.Fatalf("a cancelled turn's artifact got no grace: %v", err)
	}
	boom := errors.New("boom")
	if err := adapter.EmitArtifact(t.Context(), func(context.Context, string, any) error { return boom }, "t", f); !errors.Is(err, boom) {
		t.Fatalf("emit failure: %v", err)
	}
}
