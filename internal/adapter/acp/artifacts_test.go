package acp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// openArtifacts opens a session with SessionConfig.Artifacts set to on.
func (p *peerEnv) openArtifacts(t *testing.T, on bool) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := adaptertest.Open(t, ctx, p.a, adapter.SessionConfig{SessionID: protocol.NewID(),
		Workspace: protocol.Workspace{ID: "w", Name: "w", Path: p.ws}, Mode: protocol.ModeDefault, Artifacts: on})
	return s.(*session)
}

// The files an ACP agent writes are handed over: fs/write_text_file writes
// (under the _meta's tool call id, the running edit call's, or none) and
// edit calls that complete with locations, each file once per call;
// failed calls, files outside the workspace and a session with artifacts
// off hand over nothing.
func TestArtifacts(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("on=", on), func(t *testing.T) {
			t.Parallel()
			outside := filepath.Join(t.TempDir(), "outside.txt")
			if err := os.WriteFile(outside, []byte("elsewhere\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := newPeer(t, acppeer.Script{})
			abs := func(name string) string { return filepath.Join(p.ws, name) }
			// b.txt is written by the agent itself (no fs request), failed.txt
			// by a call that then fails.
			for name, content := range map[string]string{"b.txt": "bee\n", "failed.txt": "half\n"} {
				if err := os.WriteFile(abs(name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write := func(path, content string, meta map[string]any) step {
				params := map[string]any{"sessionId": acppeer.SessionID, "path": path, "content": content}
				if meta != nil {
					params["_meta"] = meta
				}
				return step{Request: &acppeer.Request{Method: "fs/write_text_file", Echo: true, Params: params}}
			}
			call := func(id, status string, paths ...string) step {
				var locs []map[string]any
				for _, l := range paths {
					locs = append(locs, map[string]any{"path": l})
				}
				u := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status}
				if status == "pending" {
					u["sessionUpdate"], u["kind"], u["title"] = "tool_call", "edit", "Write "+id
				}
				if locs != nil {
					u["locations"] = locs
				}
				return step{Update: u}
			}
			p.setScript(t, acppeer.Script{Turns: [][]step{{
				write("meta.txt", "from meta\n", map[string]any{"toolCallId": "call_meta"}),
				write("plain.txt", "plain\n", nil),
				// An edit call that writes through fs: handed over once.
				call("call_a", "pending", abs("a.txt")),
				write(abs("a.txt"), "hello a\n", nil),
				call("call_a", "completed"),
				// An edit call that wrote b.txt itself; its location and an
				// outside one, reported on completion.
				call("call_b", "pending"),
				call("call_b", "completed", abs("b.txt"), outside),
				call("call_f", "pending", abs("failed.txt")),
				call("call_f", "failed"),
			}}})
			s := p.openArtifacts(t, on)
			tn := turn("write files")
			rec, res, err := run(t, s, tn)
			if err != nil || res.StopReason != protocol.StopEndTurn {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			if got := rec.Text("text"); strings.Count(got, "fs/write_text_file => {}") != 3 {
				t.Fatalf("writes: %q", got)
			}
			if b, err := os.ReadFile(abs("a.txt")); err != nil || string(b) != "hello a\n" {
				t.Fatalf("a.txt = %q, %v", b, err)
			}
			events := rec.OfType(protocol.TypeArtifact)
			if !on {
				if len(res.Artifacts) != 0 || len(events) != 0 {
					t.Fatalf("off: result %+v, events %d", res.Artifacts, len(events))
				}
				return
			}
			want := []struct {
				path, call string
				size       int64
			}{
				{"meta.txt", "call_meta", 10},
				{"plain.txt", "", 6},
				{"a.txt", "call_a", 8},
				{"b.txt", "call_b", 4},
			}
			if len(res.Artifacts) != len(want) || len(events) != len(want) {
				t.Fatalf("result %d artifacts, %d events; want %d (events %v)", len(res.Artifacts), len(events), len(want), rec.Types())
			}
			for i, w := range want {
				f, ev := res.Artifacts[i], events[i].(*protocol.Artifact)
				if f.Path() != w.path || f.ToolUseID() != w.call || f.Size() != w.size {
					t.Errorf("artifact %d = %+v, want %+v", i, f.ToMessage(), w)
				}
				if ev.TurnID != tn.ID || ev.Path != w.path || ev.ToolUseID != w.call || ev.Size != w.size || ev.ArtifactID == "" {
					t.Errorf("event %d = %+v, want %+v", i, ev, w)
				}
			}
		})
	}
}
