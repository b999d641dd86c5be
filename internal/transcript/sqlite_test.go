package transcript_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/transcript"
)

func open(t *testing.T, path string, opts transcript.Options) *transcript.SQLite {
	t.Helper()
	st, err := transcript.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func text(role, s string) llm.Message {
	return llm.Message{Role: role, Content: []llm.Block{{Type: llm.BlockText, Text: s}}}
}

// conversation is a history with a tool call, its result and an artifact.
func conversation(t *testing.T) []llm.Message {
	t.Helper()
	art, err := llm.NewArtifact(llm.ArtifactFields{Path: "out/a.csv", FileName: "a.csv", Size: 3, ToolUseID: "toolu_1"})
	if err != nil {
		t.Fatal(err)
	}
	return []llm.Message{
		text(llm.RoleUser, "write a.csv"),
		{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockText, Text: "Writing."},
			{Type: llm.BlockToolUse, ToolUseID: "toolu_1", ToolName: "Write", Input: json.RawMessage(`{"file_path":"out/a.csv","content":"a,b"}`)},
		}, Artifacts: []llm.Artifact{art}},
		{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolUseID: "toolu_1", Content: []llm.Block{{Type: llm.BlockText, Text: "written"}}}}},
		text(llm.RoleAssistant, "Done."),
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "transcripts.db")
	st := open(t, path, transcript.Options{})
	if _, err := st.Load(ctx, "s1"); !errors.Is(err, transcript.ErrNotFound) {
		t.Fatalf("Load of an unsaved session: %v, want ErrNotFound", err)
	}
	want := transcript.Transcript{Messages: conversation(t), TurnOpen: true, ReadState: json.RawMessage(`{"files":[]}`),
		Marks: json.RawMessage(`[{"id":"t1","msgs":0,"blocks":0}]`)}
	if err := st.Save(ctx, "s1", want); err != nil {
		t.Fatal(err)
	}
	// Shrink, grow and change in place: only changed rows are written, and
	// what Load returns is always the last Save.
	want.Messages = want.Messages[:2]
	want.TurnOpen = false
	if err := st.Save(ctx, "s1", want); err != nil {
		t.Fatal(err)
	}
	want.Messages = append(want.Messages, conversation(t)[2], text(llm.RoleAssistant, "Changed."))
	if err := st.Save(ctx, "s1", want); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = open(t, path, transcript.Options{})
	got, err := st.Load(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", got, want)
	}
	if a := got.Messages[1].Artifacts; len(a) != 1 || a[0].Path() != "out/a.csv" || a[0].ToolUseID() != "toolu_1" {
		t.Fatalf("artifacts after the round trip: %+v", a)
	}
	if err := st.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, "s1"); !errors.Is(err, transcript.ErrNotFound) {
		t.Fatalf("Load after Delete: %v, want ErrNotFound", err)
	}
}

// rawDB opens the store's file directly, to damage it as a disk or another
// program could.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestCorruptRowStartsFresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "transcripts.db")
	st := open(t, path, transcript.Options{MaxBytes: 4096})
	if err := st.Save(ctx, "s1", transcript.Transcript{Messages: conversation(t)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, data, want string
	}{
		{"not JSON", `{"role":"user","content":[`, "message 1 does not decode"},
		{"bad role", `{"role":"system","content":[]}`, `message 1 has role "system"`},
		{"oversized", `{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("x", 5000) + `"}]}`, "message 1 is over the 4096-byte limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := rawDB(t, path).Exec(`UPDATE messages SET data = ? WHERE session_id = 's1' AND idx = 1`, []byte(c.data)); err != nil {
				t.Fatal(err)
			}
			st := open(t, path, transcript.Options{MaxBytes: 4096})
			_, err := st.Load(ctx, "s1")
			if !errors.Is(err, transcript.ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "s1") {
				t.Fatalf("Load of a damaged row: %v; want ErrCorrupt saying %q", err, c.want)
			}
			// The session starts fresh: its next Save replaces the damage.
			fresh := transcript.Transcript{Messages: []llm.Message{text(llm.RoleUser, "hi"), text(llm.RoleAssistant, "hello")}}
			if err := st.Save(ctx, "s1", fresh); err != nil {
				t.Fatal(err)
			}
			got, err := st.Load(ctx, "s1")
			if err != nil || !reflect.DeepEqual(got.Messages, fresh.Messages) {
				t.Fatalf("after a fresh Save: %+v, %v", got, err)
			}
			if err := st.Save(ctx, "s1", transcript.Transcript{Messages: conversation(t)}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMissingRowIsCorrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "transcripts.db")
	st := open(t, path, transcript.Options{})
	if err := st.Save(ctx, "s1", transcript.Transcript{Messages: conversation(t)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, path).Exec(`DELETE FROM messages WHERE idx = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, "s1"); !errors.Is(err, transcript.ErrCorrupt) {
		t.Fatalf("Load with a row missing: %v, want ErrCorrupt", err)
	}
}

// TestOverCapKeepsRecentTurns: a history over MaxBytes is saved from its
// most recent whole turns, led by a note, and stays a valid conversation.
func TestOverCapKeepsRecentTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "transcripts.db"), transcript.Options{MaxBytes: 4000})
	var h []llm.Message
	for i := range 20 {
		h = append(h, conversation(t)...)
		h[len(h)-4] = text(llm.RoleUser, "prompt "+strings.Repeat("p", 100)+string(rune('a'+i)))
	}
	if err := st.Save(ctx, "s1", transcript.Transcript{Messages: h, Marks: json.RawMessage(`[{"id":"t1","msgs":4,"blocks":0}]`)}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Marks != nil {
		t.Fatalf("turn marks kept over a cut history (they point at the wrong messages): %s", got.Marks)
	}
	size := 0
	for _, m := range got.Messages {
		b, _ := json.Marshal(m)
		size += len(b)
	}
	if size > 4000 || len(got.Messages) == 0 || len(got.Messages) >= len(h) {
		t.Fatalf("saved %d messages, %d bytes; want fewer than %d within 4000", len(got.Messages), size, len(h))
	}
	first := got.Messages[0]
	if first.Role != llm.RoleUser || !strings.Contains(first.Content[0].Text, "was not kept") || !strings.HasPrefix(first.Content[1].Text, "prompt ") {
		t.Fatalf("first kept message %+v; want the note, then a prompt", first)
	}
	if last := got.Messages[len(got.Messages)-1]; messageText(last) != "Done." {
		t.Fatalf("last kept message %+v, want the last answer", last)
	}
	for i := 1; i < len(got.Messages); i++ {
		if got.Messages[i].Role == got.Messages[i-1].Role {
			t.Fatalf("messages %d and %d have the same role", i-1, i)
		}
	}
}

func messageText(m llm.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// TestPrune: Prune drops, on a store that stays open, the transcripts not
// saved for MaxAge and keeps the others; a session whose transcript was
// dropped while the store had it cached is saved whole by its next Save
// (not just the rows that changed, which would leave a damaged transcript).
func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "transcripts.db")
	st := open(t, path, transcript.Options{MaxAge: time.Hour})
	conv := conversation(t)
	for _, s := range []string{"old", "new"} {
		if err := st.Save(ctx, s, transcript.Transcript{Messages: conv}); err != nil {
			t.Fatal(err)
		}
	}
	// Date "old" back two hours.
	db := rawDB(t, path)
	if _, err := db.Exec(`UPDATE transcripts SET saved_at = ? WHERE session_id = 'old'`, time.Now().Add(-2*time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	if n, err := st.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune: %d, %v; want 1 dropped", n, err)
	}
	if _, err := st.Load(ctx, "old"); !errors.Is(err, transcript.ErrNotFound) {
		t.Fatalf("Load of the pruned session: %v, want ErrNotFound", err)
	}
	if got, err := st.Load(ctx, "new"); err != nil || len(got.Messages) != len(conv) {
		t.Fatalf("Load of the kept session: %d messages, %v", len(got.Messages), err)
	}

	// "new" is cached; drop it behind the cache's back, then save one
	// more message: the whole conversation must be on disk.
	if n, err := st.PruneBefore(ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("PruneBefore: %d, %v; want 1 dropped", n, err)
	}
	more := append(conv, text(llm.RoleUser, "and then?"))
	if err := st.Save(ctx, "new", transcript.Transcript{Messages: more}); err != nil {
		t.Fatal(err)
	}
	// A fresh store reads from disk, not from the cache.
	st2 := open(t, path, transcript.Options{})
	got, err := st2.Load(ctx, "new")
	if err != nil || len(got.Messages) != len(more) || messageText(got.Messages[0]) != messageText(conv[0]) {
		t.Fatalf("after prune and save: %d messages, %v; want %d", len(got.Messages), err, len(more))
	}
}
