package transcript_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/transcript"
)

// BenchmarkSaveStep is the cost of keeping one step of a long session: a
// history of 400 messages of 4 KiB (1.6 MiB) grows by one message and is
// saved (one new row written and fsynced; the others only encoded and
// hashed to find that they did not change).
// benchMessages is the history's length before the step.
const benchMessages = 400

func BenchmarkSaveStep(b *testing.B) {
	ctx := context.Background()
	st, err := transcript.Open(ctx, filepath.Join(b.TempDir(), "transcripts.db"), transcript.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	body := strings.Repeat("x", 4096)
	var h []llm.Message
	for i := range benchMessages {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		h = append(h, text(role, body))
	}
	if err := st.Save(ctx, "s", transcript.Transcript{Messages: h}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		role := llm.RoleUser
		if (len(h)+i)%2 == 1 {
			role = llm.RoleAssistant
		}
		msgs := append(h[:len(h):len(h)], text(role, body))
		if err := st.Save(ctx, "s", transcript.Transcript{Messages: msgs, TurnOpen: true}); err != nil {
			b.Fatal(err)
		}
	}
}
