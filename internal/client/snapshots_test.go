package client

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/contentstore"
	"github.com/ferry-dev/ferry/protocol"
)

func withSnapshotLimits(maxFile int64, perPath int, total int64) envOpt {
	return func(c *Config) { c.SnapshotMaxFile, c.SnapshotsPerPath, c.SnapshotTotal = maxFile, perPath, total }
}

// download reads a whole artifact: its meta and its bytes.
func (d *dlEnv) download(sessionID, artifactID string) (*protocol.ArtifactMeta, []byte) {
	d.t.Helper()
	id, ans := d.read(sessionID, artifactID)
	meta, ok := ans.Payload.(*protocol.ArtifactMeta)
	if !ok {
		d.t.Fatalf("download of %s: %s %+v", artifactID, ans.Type, ans.Payload)
	}
	if meta.Size == 0 {
		d.fc.send(control(sessionID, protocol.TypeArtifactCancel, &protocol.ArtifactCancel{RequestID: id}))
		return meta, nil
	}
	return meta, d.fetch(sessionID, id, 0, meta.Size, 2*protocol.ArtifactChunkSize)
}

// snapshots lists the contents in the client's snapshot store.
func (d *dlEnv) snapshots() []string {
	d.t.Helper()
	ents, err := os.ReadDir(filepath.Join(d.stateDir, "snapshots"))
	if err != nil {
		d.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func (d *dlEnv) mustHand(sessionID, prompt string) *protocol.Artifact {
	d.t.Helper()
	art, text := d.hand(sessionID, prompt)
	if art == nil || text != "ok" {
		d.t.Fatalf("%q: %+v %q", prompt, art, text)
	}
	return art
}

// restart stops the client and starts it again on the same workspace and
// state directory (a download needs no open session).
func (d *dlEnv) restart(opts ...envOpt) {
	d.t.Helper()
	ws, state, m := d.ws, d.stateDir, d.m
	d.stop()
	e := m.startOn(d.t, ws, state, append([]envOpt{withAdapters(artAdapter{})}, opts...)...)
	fc, _ := m.accept(d.ctx)
	d.testEnv, d.fc = e, fc
}

// TestSnapshotServesTheAgentsVersion: a download after the agent's file
// was changed again — rewritten, replaced, deleted — serves exactly the
// bytes it handed over, with the registered size and time, not marked
// changed but marked workspace_differs (the workspace's file is not the
// version served); and still does after the client restarts. Untouched,
// it is marked neither.
func TestSnapshotServesTheAgentsVersion(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	made := make([]byte, 3*protocol.ArtifactChunkSize+77)
	_, _ = rand.Read(made)
	d.write("out/report.bin", made)
	art := d.mustHand(d.sess, "- out/report.bin")
	first, _ := d.download(d.sess, art.ArtifactID)
	if first.ChangedSince || first.WorkspaceDiffers {
		t.Fatalf("untouched: %+v, want it unmarked", first)
	}

	d.write("out/report.bin", []byte("the agent's next version, shorter"))
	meta, got := d.download(d.sess, art.ArtifactID)
	if !bytes.Equal(got, made) {
		t.Fatalf("after a rewrite: served %d bytes that are not the agent's version", len(got))
	}
	if meta.ChangedSince || meta.Size != int64(len(made)) || meta.ETag != first.ETag || meta.ModifiedAt != first.ModifiedAt {
		t.Fatalf("after a rewrite: %+v, want the registered version %+v unmarked", meta, first)
	}
	if !meta.WorkspaceDiffers {
		t.Fatalf("after a rewrite: %+v, want workspace_differs", meta)
	}

	if err := os.Remove(filepath.Join(d.root, "out", "report.bin")); err != nil {
		t.Fatal(err)
	}
	d.restart()
	meta, got = d.download(d.sess, art.ArtifactID)
	if !bytes.Equal(got, made) || meta.ChangedSince || !meta.WorkspaceDiffers {
		t.Fatalf("after the file was deleted and the client restarted: %d bytes, %+v", len(got), meta)
	}
}

// TestSnapshotDedup: the same content handed over twice (two paths, two
// sessions) is stored once; an empty file is snapshotted too.
func TestSnapshotDedup(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	d.write("a.csv", []byte("x,y\n1,2\n"))
	d.write("b.csv", []byte("x,y\n1,2\n"))
	d.write("empty.txt", nil)
	a := d.mustHand(d.sess, "- a.csv")
	other := protocol.NewID()
	d.open(d.ctx, d.fc, other, "art")
	b := d.mustHand(other, "- b.csv")
	e := d.mustHand(d.sess, "- empty.txt")
	want := []string{contentstore.HashOf([]byte("x,y\n1,2\n")), contentstore.HashOf(nil)}
	slices.Sort(want)
	if got := d.snapshots(); !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want each content once: %v", got, want)
	}
	d.write("a.csv", []byte("changed"))
	d.write("b.csv", []byte("changed too"))
	d.write("empty.txt", []byte("not empty now"))
	for _, c := range []struct {
		sess string
		art  *protocol.Artifact
		want string
	}{{d.sess, a, "x,y\n1,2\n"}, {other, b, "x,y\n1,2\n"}, {d.sess, e, ""}} {
		if meta, got := d.download(c.sess, c.art.ArtifactID); string(got) != c.want || meta.ChangedSince {
			t.Errorf("%s: %q %+v, want %q unmarked", c.art.Path, got, meta, c.want)
		}
	}
}

// TestSnapshotEviction: the per-workspace total evicts the least recently
// registered content first, and that artifact then downloads as the file
// is now, marked; a file over the per-file cap is never snapshotted; a
// path keeps its newest PerPath contents; a content another record still
// names is never deleted.
func TestSnapshotEviction(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t, withSnapshotLimits(60, 2, 100))
	v := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

	// The total: 40 + 40 fit, the third 40 pushes a's out.
	d.write("a.txt", v('a', 40))
	a := d.mustHand(d.sess, "- a.txt")
	d.write("b.txt", v('b', 40))
	b := d.mustHand(d.sess, "- b.txt")
	d.write("c.txt", v('c', 40))
	c := d.mustHand(d.sess, "- c.txt")
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		d.write(n, []byte("edited "+n))
	}
	if meta, got := d.download(d.sess, a.ArtifactID); string(got) != "edited a.txt" || !meta.ChangedSince {
		t.Errorf("the oldest, evicted: %q %+v, want the current file marked changed_since", got, meta)
	}
	for _, x := range []struct {
		art  *protocol.Artifact
		want []byte
	}{{b, v('b', 40)}, {c, v('c', 40)}} {
		if meta, got := d.download(d.sess, x.art.ArtifactID); !bytes.Equal(got, x.want) || meta.ChangedSince {
			t.Errorf("%s, kept: %q %+v", x.art.Path, got, meta)
		}
	}
	if slices.Contains(d.snapshots(), contentstore.HashOf(v('a', 40))) {
		t.Error("the evicted content is still stored")
	}

	// The per-file cap: 70 bytes > 60 is not snapshotted.
	d.write("big.txt", v('B', 70))
	big := d.mustHand(d.sess, "- big.txt")
	if slices.Contains(d.snapshots(), contentstore.HashOf(v('B', 70))) {
		t.Error("a file over the per-file cap was snapshotted")
	}
	if meta, got := d.download(d.sess, big.ArtifactID); !bytes.Equal(got, v('B', 70)) || meta.ChangedSince {
		t.Errorf("an unsnapshotted file that did not change: %q %+v, want it unmarked", got, meta)
	}
	d.write("big.txt", []byte("edited big"))
	if meta, got := d.download(d.sess, big.ArtifactID); string(got) != "edited big" || !meta.ChangedSince {
		t.Errorf("an unsnapshotted file that changed: %q %+v, want it marked", got, meta)
	}

	// Per path: three versions of p.txt keep the newest two. The first
	// version's content is also c.txt's (still kept there): evicting it
	// from p.txt must not delete it.
	d.write("p.txt", v('c', 40))
	p1 := d.mustHand(d.sess, "- p.txt")
	d.write("p.txt", v('2', 10))
	p2 := d.mustHand(d.sess, "- p.txt")
	d.write("p.txt", v('3', 10))
	p3 := d.mustHand(d.sess, "- p.txt")
	d.write("p.txt", []byte("now"))
	if meta, got := d.download(d.sess, p1.ArtifactID); string(got) != "now" || !meta.ChangedSince {
		t.Errorf("p.txt's third-newest version: %q %+v, want the current file marked", got, meta)
	}
	for _, x := range []struct {
		art  *protocol.Artifact
		want []byte
	}{{p2, v('2', 10)}, {p3, v('3', 10)}, {c, v('c', 40)}} {
		if meta, got := d.download(d.sess, x.art.ArtifactID); !bytes.Equal(got, x.want) || meta.ChangedSince {
			t.Errorf("%s: %q %+v, want its snapshot", x.art.Path, got, meta)
		}
	}
}

// TestSnapshotTampered: a snapshot whose stored bytes no longer match
// its hash is never served as the agent's version: the download serves
// the file on disk, marked since it changed.
func TestSnapshotTampered(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	d.write("r.txt", []byte("the agent's numbers: 1 2 3"))
	art := d.mustHand(d.sess, "- r.txt")
	d.write("r.txt", []byte("edited later"))
	h := contentstore.HashOf([]byte("the agent's numbers: 1 2 3"))
	if err := os.WriteFile(filepath.Join(d.stateDir, "snapshots", h), []byte("forged numbers: 6 6 6 6 6"), 0o600); err != nil {
		t.Fatal(err)
	}
	meta, got := d.download(d.sess, art.ArtifactID)
	if string(got) != "edited later" || !meta.ChangedSince {
		t.Fatalf("a tampered snapshot: served %q %+v, want the current file marked", got, meta)
	}
}

// TestSnapshotPrune: the artifact records of a session that recorded none
// for the state age bound go with it at the client's start, with the
// snapshots no other record names; another session's records and a
// content they share stay; a leftover content nobody names is swept.
func TestSnapshotPrune(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	old := protocol.NewID()
	d.open(d.ctx, d.fc, old, "art")
	d.write("only-old.txt", []byte("only the old session's"))
	d.write("shared.txt", []byte("shared content"))
	d.write("new.txt", []byte("shared content"))
	oldOnly := d.mustHand(old, "- only-old.txt")
	d.mustHand(old, "- shared.txt")
	kept := d.mustHand(d.sess, "- new.txt")
	if n := len(d.snapshots()); n != 2 {
		t.Fatalf("%d snapshots, want 2", n)
	}
	ws, state, m := d.ws, d.stateDir, d.m
	d.stop()
	db, err := sql.Open("sqlite", filepath.Join(state, "artifacts.db"))
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-stateMaxAge - time.Hour).UnixMicro()
	if _, err := db.Exec(`UPDATE artifacts SET created_at = ? WHERE session_id = ?`, long, old); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(state, "snapshots", contentstore.HashOf([]byte("nobody")))
	if err := os.WriteFile(stray, []byte("nobody"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := m.startOn(t, ws, state, withAdapters(artAdapter{}))
	fc, _ := m.accept(d.ctx)
	d.testEnv, d.fc = e, fc
	waitFor(d.ctx, t, "the old session's records to be pruned", func() bool {
		_, err := d.c.arts.Lookup(d.ctx, old, oldOnly.ArtifactID)
		return err != nil
	})
	d.c.arts.mu.Lock()   // the prune's deletions are done
	d.c.arts.mu.Unlock() //nolint:staticcheck // an empty critical section: waits for Prune
	var rows int
	if err := d.c.arts.db.QueryRow(`SELECT COUNT(*) FROM artifacts WHERE session_id = ?`, old).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows of the pruned session left (%v)", rows, err)
	}
	if got, want := d.snapshots(), []string{contentstore.HashOf([]byte("shared content"))}; !slices.Equal(got, want) {
		t.Fatalf("snapshots left %v, want only the shared one %v", got, want)
	}
	d.write("new.txt", []byte("edited"))
	if meta, got := d.download(d.sess, kept.ArtifactID); string(got) != "shared content" || meta.ChangedSince {
		t.Fatalf("the kept session's artifact: %q %+v", got, meta)
	}
	if _, ans := d.read(old, oldOnly.ArtifactID); endError(t, ans).Code != protocol.CodeNotFound {
		t.Fatalf("the pruned artifact: %+v", ans.Payload)
	}
}

// TestArtifactLogUpgradeAddsSnapshots: a log from before snapshots
// (versions, no snapshot columns) opens, gains the columns, and its
// records download as the file is now.
func TestArtifactLogUpgradeAddsSnapshots(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(state, "artifacts.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE artifacts (session_id TEXT NOT NULL, artifact_id TEXT NOT NULL, root TEXT NOT NULL,
		path TEXT NOT NULL, created_at INTEGER NOT NULL, ident BLOB, size INTEGER, mtime INTEGER, PRIMARY KEY (session_id, artifact_id))`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := openArtifactLog(filepath.Join(state, "artifacts.db"), filepath.Join(state, "snapshots"), limitsOf(Config{}), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec, err := l.Lookup(testContext(t), "s", "art_none")
	if !errors.Is(err, errUnknownArtifact) || rec.Snapshot != "" {
		t.Fatalf("Lookup on an upgraded log: %+v %v", rec, err)
	}
	var n int
	if err := l.db.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('artifacts') WHERE name IN ('snapshot', 'snap_size')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("snapshot columns: %d, %v", n, err)
	}
}
