package adapter

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/protocol"
)

// artifactGrace is how long a cancelled turn still has to send an
// agent.artifact: the user should hear of a file the agent made even when
// the turn is being cancelled.
const artifactGrace = 100 * time.Millisecond

// EmitArtifact sends f as turn turnID's agent.artifact, under a new
// artifact id; a cancelled ctx gets artifactGrace. The client checks and
// records it before it leaves the machine; an adapter logs a failure and
// goes on (the file is written either way).
func EmitArtifact(ctx context.Context, emit Emit, turnID string, f artifact.File) error {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), artifactGrace)
		defer cancel()
	}
	ev := &protocol.Artifact{TurnID: turnID, ArtifactID: "art_" + rand.Text(), Path: f.Path(), FileName: f.FileName(),
		Size: f.Size(), MimeType: f.MimeType(), ToolUseID: f.ToolUseID()}
	if err := emit(ctx, protocol.TypeArtifact, ev); err != nil {
		return fmt.Errorf("adapter: emit agent.artifact %s: %w", f.Path(), err)
	}
	return nil
}
