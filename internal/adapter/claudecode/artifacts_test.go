package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// With artifacts on, the succeeded Write, Edit, MultiEdit and NotebookEdit
// calls hand over their files (agent.artifact with the call's tool_use id
// and the turn id, and Result.Artifacts, in order); the failed call and
// the write outside the workspace hand over nothing, the latter with a log
// line. Off, nothing is handed over.
func TestFakeArtifacts(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			t.Parallel()
			env := openFakeSession(t, "writes", nil, func(c *adapter.SessionConfig) { c.Artifacts = on })
			if err := os.WriteFile(filepath.Join(env.ws, "notes.txt"), []byte("one\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			rec := newRecorder(t)
			turn := adaptertest.TextTurn("write them")
			res, err := env.sess.Run(ctx, turn, rec.emit)
			if err != nil || res.StopReason != protocol.StopEndTurn {
				t.Fatalf("%+v, %v", res, err)
			}
			evs := rec.OfType(protocol.TypeArtifact)
			if !on {
				if len(evs) != 0 || len(res.Artifacts) != 0 {
					t.Fatalf("off: %d events, %d artifacts", len(evs), len(res.Artifacts))
				}
				return
			}
			want := []struct{ id, path, mime string }{
				{"toolu_w", "out/a.txt", "text/plain"}, {"toolu_e", "notes.txt", "text/plain"},
				{"toolu_m", "multi.txt", "text/plain"}, {"toolu_n", "nb.ipynb", ""},
			}
			if len(evs) != len(want) || len(res.Artifacts) != len(want) {
				t.Fatalf("%d events, %d artifacts, want %d; log:\n%s", len(evs), len(res.Artifacts), len(want), env.logs.String())
			}
			for i, w := range want {
				a := evs[i].(*protocol.Artifact)
				st, err := os.Stat(filepath.Join(env.ws, w.path))
				if err != nil {
					t.Fatal(err)
				}
				if a.TurnID != turn.ID || a.ToolUseID != w.id || a.Path != w.path || a.Size != st.Size() || a.FileName != filepath.Base(w.path) {
					t.Errorf("event %d: %+v, want %s %s size %d", i, a, w.id, w.path, st.Size())
				}
				if w.mime != "" && !strings.HasPrefix(a.MimeType, w.mime) {
					t.Errorf("event %d: mime %q", i, a.MimeType)
				}
				if f := res.Artifacts[i]; f.Path() != w.path || f.ToolUseID() != w.id || f.Size() != st.Size() {
					t.Errorf("result %d: %s %s %d", i, f.Path(), f.ToolUseID(), f.Size())
				}
			}
			if log := env.logs.String(); !strings.Contains(log, "not handed over") || !strings.Contains(log, "toolu_o") {
				t.Errorf("no log line for the write outside the workspace:\n%s", log)
			}
		})
	}
}
