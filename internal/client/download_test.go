package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/protocol"
)

// artAdapter is a test agent that hands over files the test made: a prompt
// "ID PATH" emits agent.artifact for PATH with artifact_id ID ("-": let
// the client name it). The turn's text reports an Emit error, if any.
type artAdapter struct{}

func (artAdapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{ID: "art", Name: "art", Modes: []string{protocol.ModeDefault},
		InputTypes: []string{protocol.InputText}, FileTokens: "literal"}
}

func (artAdapter) Open(_ context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	return artSession{}, nil
}

type artSession struct{}

func (artSession) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	id, path, _ := strings.Cut(turn.Prompt.Literal(), " ")
	if id == "-" {
		id = ""
	}
	err := emit(ctx, protocol.TypeArtifact, &protocol.Artifact{TurnID: turn.ID, ArtifactID: id, Path: path,
		FileName: filepath.Base(path), Size: 1, MimeType: "text/plain"})
	if err != nil {
		// The test reads the failure from the turn's text.
		return adapter.Result{Text: "emit failed: " + err.Error(), StopReason: "end_turn"}, nil //nolint:nilerr // see above
	}
	return adapter.Result{Text: "ok", StopReason: "end_turn"}, nil
}

func (artSession) Answer(string, *protocol.InteractionResponse) error {
	return adapter.ErrUnknownInteraction
}
func (artSession) SetMode(string, json.RawMessage) error { return nil }
func (artSession) Compact(context.Context, *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	return nil, errors.New("no")
}
func (artSession) Close() error { return nil }

// dlEnv is a client with the art adapter, connected to a fake master with
// one session open.
type dlEnv struct {
	*testEnv
	fc   *fakeConn
	sess string
	root string // the workspace, symlinks resolved
	ctx  context.Context
}

func newDLEnv(t *testing.T, opts ...envOpt) *dlEnv {
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	e := m.start(t, append([]envOpt{withAdapters(artAdapter{})}, opts...)...)
	ctx := testContext(t)
	fc, _ := m.accept(ctx)
	d := &dlEnv{testEnv: e, fc: fc, sess: protocol.NewID(), root: e.c.Workspaces()[0].Path, ctx: ctx}
	e.open(ctx, fc, d.sess, "art")
	return d
}

func (d *dlEnv) write(name string, content []byte) {
	d.t.Helper()
	p := filepath.Join(d.root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// hand runs a prompt and returns the agent.artifact it sent (nil when none)
// and the turn's text.
func (d *dlEnv) hand(sessionID, prompt string) (*protocol.Artifact, string) {
	d.t.Helper()
	d.fc.send(control(sessionID, protocol.TypePromptRequest, &protocol.PromptRequest{PromptText: prompt, InputType: protocol.InputText}))
	var art *protocol.Artifact
	msgs := d.fc.until(d.ctx, isType(protocol.TypeTextDone))
	for _, m := range msgs {
		if a, ok := m.Payload.(*protocol.Artifact); ok {
			art = a
		}
	}
	return art, msgs[len(msgs)-1].Payload.(*protocol.TextDone).Text
}

// read sends control.artifact.read and returns the client's first answer:
// session.artifact.meta or session.artifact.end.
func (d *dlEnv) read(sessionID, artifactID string) (string, *protocol.Message) {
	d.t.Helper()
	id := protocol.NewID()
	m := control(sessionID, protocol.TypeArtifactRead, &protocol.ArtifactRead{RequestID: id, ArtifactID: artifactID})
	d.fc.send(m)
	ans := d.fc.until(d.ctx, func(m *protocol.Message) bool {
		return m.Type == protocol.TypeArtifactMeta || m.Type == protocol.TypeArtifactEnd
	})
	last := ans[len(ans)-1]
	if last.Type == protocol.TypeArtifactMeta && (last.ParentID != m.MessageID || last.Payload.(*protocol.ArtifactMeta).RequestID != id) {
		d.t.Fatalf("meta answers %s/%s", last.ParentID, last.Payload.(*protocol.ArtifactMeta).RequestID)
	}
	return id, last
}

func endError(t *testing.T, m *protocol.Message) *protocol.Error {
	t.Helper()
	end, ok := m.Payload.(*protocol.ArtifactEnd)
	if !ok || end.Error == nil {
		t.Fatalf("got %s %+v, want session.artifact.end with an error", m.Type, m.Payload)
	}
	return end.Error
}

// fetch asks for [off, off+n) with the given window and returns the bytes,
// checking that the client never sends past its credit: each time the
// credit is used up, a probe (a range for an unknown download, answered
// with an end) must come back before any further data, and only then is
// an ack sent.
func (d *dlEnv) fetch(sessionID, id string, off, n, window int64) []byte {
	d.t.Helper()
	d.fc.send(control(sessionID, protocol.TypeArtifactRange, &protocol.ArtifactRange{RequestID: id, Offset: off, Length: n, Window: window}))
	var out []byte
	next, acked := off, off
	for {
		m := d.fc.next(d.ctx)
		switch m.Type {
		case protocol.TypeArtifactEnd:
			if e := m.Payload.(*protocol.ArtifactEnd); e.RequestID == id {
				if e.Error != nil || next != off+n {
					d.t.Fatalf("end %+v at %d of %d", e.Error, next, off+n)
				}
				return out
			}
			d.t.Fatalf("an end for another download: %+v", m.Payload)
		case binaryFrame:
		default:
			continue
		}
		c, err := protocol.DecodeArtifactChunk(m.Payload.([]byte))
		if err != nil || c.RequestID != id || c.Offset != next {
			d.t.Fatalf("frame %v: %s at %d, want %s at %d", err, c.RequestID, c.Offset, id, next)
		}
		if c.Offset+int64(len(c.Data)) > acked+window {
			d.t.Fatalf("the client sent up to %d with credit up to %d", c.Offset+int64(len(c.Data)), acked+window)
		}
		out = append(out, c.Data...)
		next += int64(len(c.Data))
		if next < off+n && next+protocol.ArtifactChunkSize > acked+window {
			probe := protocol.NewID()
			d.fc.send(control(sessionID, protocol.TypeArtifactRange, &protocol.ArtifactRange{RequestID: probe, Offset: 0, Length: 1, Window: window}))
			for {
				pm := d.fc.next(d.ctx)
				if pm.Type == binaryFrame {
					d.t.Fatalf("data past the credit (up to %d) before the probe's answer", acked+window)
				}
				if e, ok := pm.Payload.(*protocol.ArtifactEnd); ok && e.RequestID == probe {
					break
				}
			}
			d.fc.send(control(sessionID, protocol.TypeArtifactAck, &protocol.ArtifactAck{RequestID: id, Through: next}))
			acked = next
		}
	}
}

func TestArtifactDownloadExactBytesWithinCredit(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	content := make([]byte, 5*protocol.ArtifactChunkSize+1234)
	_, _ = rand.Read(content)
	d.write("out/data.bin", content)
	art, text := d.hand(d.sess, "- out/data.bin")
	if art == nil || !strings.HasPrefix(art.ArtifactID, "art_") || text != "ok" {
		t.Fatalf("artifact %+v, turn %q: the client must name an artifact the adapter left unnamed", art, text)
	}
	id, ans := d.read(d.sess, art.ArtifactID)
	meta, ok := ans.Payload.(*protocol.ArtifactMeta)
	if !ok || meta.Size != int64(len(content)) || meta.ETag == "" || meta.ModifiedAt == "" {
		t.Fatalf("read answered %s %+v", ans.Type, ans.Payload)
	}
	got := d.fetch(d.sess, id, 0, int64(len(content)), 2*protocol.ArtifactChunkSize)
	if !bytes.Equal(got, content) {
		t.Fatalf("fetched %d bytes that differ from the file", len(got))
	}
	// A range in the middle, starting inside a chunk.
	id, _ = d.read(d.sess, art.ArtifactID)
	got = d.fetch(d.sess, id, 70000, 200000, protocol.ArtifactChunkSize)
	if !bytes.Equal(got, content[70000:270000]) {
		t.Fatal("a middle range differs from the file")
	}
	// A range past the end is refused.
	id, _ = d.read(d.sess, art.ArtifactID)
	d.fc.send(control(d.sess, protocol.TypeArtifactRange, &protocol.ArtifactRange{RequestID: id, Offset: 10, Length: int64(len(content)), Window: protocol.MinArtifactWindow}))
	if e := endError(t, d.fc.until(d.ctx, isType(protocol.TypeArtifactEnd))[0]); e.Code != protocol.CodeInvalidValue {
		t.Fatalf("a range past the end: %+v", e)
	}
	waitFor(d.ctx, t, "every download slot back", func() bool { return len(d.c.readSlots) == 0 })
}

// withoutSnapshots turns the snapshots off: every download reads the file
// on disk, as one whose snapshot was evicted does.
func withoutSnapshots(c *Config) { c.SnapshotTotal = -1 }

// TestArtifactReadRefused: only a recorded artifact of the session is
// read, and without its snapshot (here: snapshots off) only a regular
// file still inside the workspace, with a single link.
func TestArtifactReadRefused(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t, withoutSnapshots)
	d.write("a.txt", []byte("a"))
	a, _ := d.hand(d.sess, "art_a a.txt")
	other := protocol.NewID()
	d.open(d.ctx, d.fc, other, "art")

	outside := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(outside, []byte("root:x:0:0"), 0o600); err != nil {
		t.Fatal(err)
	}
	swap := func(name string, to func(p string) error) *protocol.Artifact {
		d.write(name, []byte("ok"))
		art, _ := d.hand(d.sess, "- "+name)
		p := filepath.Join(d.root, filepath.FromSlash(name))
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := to(p); err != nil {
			t.Fatal(err)
		}
		return art
	}
	linkOut := swap("link.txt", func(p string) error { return os.Symlink(outside, p) })
	linkPasswd := swap("passwd.txt", func(p string) error { return os.Symlink("/etc/passwd", p) })
	fifo := swap("fifo.txt", func(p string) error { return syscall.Mkfifo(p, 0o600) })
	dir := swap("dir.txt", func(p string) error { return os.Mkdir(p, 0o755) })
	gone := swap("gone.txt", func(string) error { return nil })
	d.write("sub/in.txt", []byte("in"))
	parent, _ := d.hand(d.sess, "- sub/in.txt")
	if err := os.RemoveAll(filepath.Join(d.root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(d.root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(outside), "in.txt"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}

	for name, tc := range map[string]struct{ session, id string }{
		"never registered":          {d.sess, "art_never"},
		"another session's":         {other, a.ArtifactID},
		"a symlink swapped outside": {d.sess, linkOut.ArtifactID},
		"a symlink to /etc/passwd":  {d.sess, linkPasswd.ArtifactID},
		"a FIFO swapped in":         {d.sess, fifo.ArtifactID},
		"a directory swapped in":    {d.sess, dir.ArtifactID},
		"a file that is gone":       {d.sess, gone.ArtifactID},
		"a parent swapped outside":  {d.sess, parent.ArtifactID},
	} {
		_, ans := d.read(tc.session, tc.id)
		if e := endError(t, ans); e.Code != protocol.CodeNotFound {
			t.Errorf("%s: %+v, want not_found", name, e)
		}
	}
	// The one good artifact still reads.
	if _, ans := d.read(d.sess, a.ArtifactID); ans.Type != protocol.TypeArtifactMeta {
		t.Fatalf("the registered file: %s %+v", ans.Type, ans.Payload)
	}
}

// TestArtifactIDs: an artifact_id stays bound to its file; the same
// registration again is fine; the record outlives a restart.
func TestArtifactIDs(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	d.write("a.txt", []byte("aaa"))
	d.write("b.txt", []byte("bbb"))
	if art, text := d.hand(d.sess, "art_x a.txt"); art == nil || text != "ok" {
		t.Fatalf("first registration: %+v %q", art, text)
	}
	if art, text := d.hand(d.sess, "art_x a.txt"); art == nil || text != "ok" {
		t.Fatalf("the same registration again: %+v %q", art, text)
	}
	if art, text := d.hand(d.sess, "art_x b.txt"); art != nil || !strings.Contains(text, "emit failed") {
		t.Fatalf("another file under a taken artifact_id: %+v %q; want it refused, unsent", art, text)
	}
	if art, text := d.hand(d.sess, "bad a.txt"); art != nil || !strings.Contains(text, "emit failed") {
		t.Fatalf("a malformed artifact_id: %+v %q", art, text)
	}
	// A restart (same state directory and workspace) keeps the record.
	ws, state := d.ws, d.stateDir
	d.stop()
	m := d.m
	e := m.startOn(t, ws, state, withAdapters(artAdapter{}))
	fc, _ := m.accept(d.ctx)
	d.testEnv, d.fc = e, fc
	id, ans := d.read(d.sess, "art_x")
	if ans.Type != protocol.TypeArtifactMeta {
		t.Fatalf("after a restart: %s %+v", ans.Type, ans.Payload)
	}
	if got := d.fetch(d.sess, id, 0, 3, protocol.MinArtifactWindow); string(got) != "aaa" {
		t.Fatalf("after a restart: %q", got)
	}
}

// TestArtifactETag: the version is stable while the file is the one
// registered, and stays the registered one while its snapshot is served
// (the file replaced by another with the same content changes nothing);
// without a snapshot the replaced file is served under a new ETag, marked.
func TestArtifactETag(t *testing.T) {
	t.Parallel()
	for _, snap := range []bool{true, false} {
		opts := []envOpt{}
		if !snap {
			opts = append(opts, withoutSnapshots)
		}
		d := newDLEnv(t, opts...)
		d.write("f.txt", []byte("one"))
		art, _ := d.hand(d.sess, "- f.txt")
		meta := func() *protocol.ArtifactMeta {
			t.Helper()
			_, ans := d.read(d.sess, art.ArtifactID)
			m, ok := ans.Payload.(*protocol.ArtifactMeta)
			if !ok {
				t.Fatalf("snapshots %v: %s %+v", snap, ans.Type, ans.Payload)
			}
			return m
		}
		first := meta()
		if again := meta(); again.ETag != first.ETag || again.ChangedSince {
			t.Fatalf("snapshots %v: an unchanged file changed its ETag: %s, %+v", snap, first.ETag, again)
		}
		p := filepath.Join(d.root, "f.txt")
		if err := os.WriteFile(p+".tmp", []byte("one"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
		after := meta()
		if snap && (after.ETag != first.ETag || after.ChangedSince || after.ModifiedAt != first.ModifiedAt) {
			t.Errorf("the snapshot served after the file was replaced: %+v, want the registered %+v", after, first)
		}
		if !snap && (after.ETag == first.ETag || !after.ChangedSince) {
			t.Errorf("without a snapshot, the replaced file: %+v, want a new ETag and changed_since", after)
		}
	}
}

// TestArtifactReadLifetime: a cancelled download, one whose connection
// drops, and one the master never continues all give their slot back; a
// client serving maxReads downloads answers the next one busy.
func TestArtifactReadLifetime(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	d.write("f.bin", bytes.Repeat([]byte("x"), 4*protocol.ArtifactChunkSize))
	art, _ := d.hand(d.sess, "- f.bin")
	slotsFree := func(what string) {
		t.Helper()
		waitFor(d.ctx, t, what, func() bool { return len(d.c.readSlots) == 0 })
	}

	id, _ := d.read(d.sess, art.ArtifactID)
	d.fc.send(control(d.sess, protocol.TypeArtifactCancel, &protocol.ArtifactCancel{RequestID: id}))
	slotsFree("a download cancelled after its meta to end")

	// Mid-stream: one window sent, no ack, then cancelled.
	id, _ = d.read(d.sess, art.ArtifactID)
	d.fc.send(control(d.sess, protocol.TypeArtifactRange, &protocol.ArtifactRange{RequestID: id, Offset: 0, Length: 4 * protocol.ArtifactChunkSize, Window: protocol.MinArtifactWindow}))
	d.fc.until(d.ctx, isType(binaryFrame))
	d.fc.send(control(d.sess, protocol.TypeArtifactCancel, &protocol.ArtifactCancel{RequestID: id}))
	slotsFree("a download cancelled mid-stream to end")

	// Busy: maxReads downloads waiting for their range, then one more.
	var ids []string
	for range maxReads {
		id, ans := d.read(d.sess, art.ArtifactID)
		if ans.Type != protocol.TypeArtifactMeta {
			t.Fatalf("download %d: %s %+v", len(ids), ans.Type, ans.Payload)
		}
		ids = append(ids, id)
	}
	if _, ans := d.read(d.sess, art.ArtifactID); endError(t, ans).Code != protocol.CodeBusy {
		t.Fatalf("download %d: %+v, want busy", maxReads+1, ans.Payload)
	}
	// The connection drops: every download on it ends.
	d.fc.drop()
	slotsFree("the downloads of a dropped connection to end")
}
