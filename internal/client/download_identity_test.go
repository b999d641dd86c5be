package client

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// TestArtifactServesOnlyRegisteredFile: without snapshots (off here, as
// for one evicted) a download serves the file on disk only when it is
// safe — a hard link to a file outside the workspace swapped in for it
// (same place, no symlink for the path checks to see) is refused — and
// marks it changed_since when it is not the registered version: another
// file renamed over it, or the file grown since. The registered inode with
// its size and mtime restored cannot be told apart, and is not marked.
func TestArtifactServesOnlyRegisteredFile(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t, withoutSnapshots)
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte("root:$6$secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	swap := func(name string, to func(p string) error) *protocol.Artifact {
		t.Helper()
		d.write(name, []byte("report"))
		art, text := d.hand(d.sess, "- "+name)
		if art == nil {
			t.Fatalf("%s: not registered: %q", name, text)
		}
		if err := to(filepath.Join(d.root, name)); err != nil {
			t.Fatal(err)
		}
		return art
	}
	hardLink := swap("hard.txt", func(p string) error {
		if err := os.Remove(p); err != nil {
			return err
		}
		return os.Link(outside, p)
	})
	renamed := swap("renamed.txt", func(p string) error {
		if err := os.WriteFile(p+".new", []byte("REPORT"), 0o644); err != nil {
			return err
		}
		return os.Rename(p+".new", p)
	})
	appended := swap("appended.txt", func(p string) error {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(" and more")
		return err
	})
	rewritten := swap("rewritten.txt", func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("REPORT"), 0o644); err != nil {
			return err
		}
		return os.Chtimes(p, fi.ModTime(), fi.ModTime())
	})
	if _, ans := d.read(d.sess, hardLink.ArtifactID); ans.Type == protocol.TypeArtifactMeta {
		t.Errorf("a hard link to a file outside swapped in: served (%+v)", ans.Payload)
	} else if e := endError(t, ans); e.Code != protocol.CodeNotFound {
		t.Errorf("a hard link to a file outside swapped in: %+v, want not_found", e)
	}
	for name, tc := range map[string]struct {
		art     *protocol.Artifact
		want    string
		changed bool
	}{
		"another file renamed over it": {renamed, "REPORT", true},
		"the file grown since":         {appended, "report and more", true},
		"the same inode, size, mtime":  {rewritten, "REPORT", false},
	} {
		id, ans := d.read(d.sess, tc.art.ArtifactID)
		meta, ok := ans.Payload.(*protocol.ArtifactMeta)
		if !ok {
			t.Errorf("%s: %s %+v, want the current file", name, ans.Type, ans.Payload)
			continue
		}
		if meta.ChangedSince != tc.changed || meta.Size != int64(len(tc.want)) {
			t.Errorf("%s: %+v, want changed_since %v and size %d", name, meta, tc.changed, len(tc.want))
		}
		if got := d.fetch(d.sess, id, 0, meta.Size, protocol.MinArtifactWindow); string(got) != tc.want {
			t.Errorf("%s: served %q, want %q", name, got, tc.want)
		}
	}
}

// TestArtifactRegistrationRefusesHardLink: an agent cannot hand over a file
// that has other hard links (ln /etc/shadow out.txt, then declare out.txt):
// the registration fails with a reason, and nothing is sent or recorded.
func TestArtifactRegistrationRefusesHardLink(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte("root:$6$secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(d.root, "out.txt")); err != nil {
		t.Fatal(err)
	}
	art, text := d.hand(d.sess, "art_linked out.txt")
	if art != nil || !strings.Contains(text, "emit failed") || !strings.Contains(text, "hard link") {
		t.Fatalf("a hard-linked file: %+v %q; want it refused, unsent, with the reason", art, text)
	}
	if _, err := d.c.arts.Lookup(d.ctx, d.sess, "art_linked"); err == nil {
		t.Fatal("the refused artifact was recorded")
	}
	if art, text := d.hand(d.sess, "- missing.txt"); art != nil || !strings.Contains(text, "emit failed") {
		t.Fatalf("a file that does not exist: %+v %q; want it refused", art, text)
	}
}

// TestArtifactLogUpgrade: a log written before identities were recorded
// opens; its records are served only while the file has a single link.
func TestArtifactLogUpgrade(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(state, "artifacts.db"))
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeMaster(t)
	ws := t.TempDir()
	root, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	sess := protocol.NewID()
	if _, err := db.Exec(`CREATE TABLE artifacts (session_id TEXT NOT NULL, artifact_id TEXT NOT NULL, root TEXT NOT NULL,
		path TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, artifact_id))`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO artifacts VALUES (?, ?, ?, ?, ?)`, sess, "art_"+strings.TrimSuffix(name, ".txt"), root, name, time.Now().UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "two.txt"), filepath.Join(t.TempDir(), "elsewhere")); err != nil {
		t.Fatal(err)
	}
	m.autoAck.Store(true)
	e := m.startOn(t, ws, state, withAdapters(artAdapter{}))
	ctx := testContext(t)
	fc, _ := m.accept(ctx)
	d := &dlEnv{testEnv: e, fc: fc, sess: sess, root: root, ctx: ctx}
	e.open(ctx, fc, sess, "art")
	if _, ans := d.read(sess, "art_one"); ans.Type != protocol.TypeArtifactMeta {
		t.Errorf("an old record of a single-link file: %s %+v", ans.Type, ans.Payload)
	}
	if _, ans := d.read(sess, "art_two"); ans.Type == protocol.TypeArtifactMeta {
		t.Error("an old record of a file with another hard link was served")
	}
}
