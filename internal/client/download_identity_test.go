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

// TestArtifactServesOnlyRegisteredFile: a download serves the file the
// agent handed over, not whatever later takes its name. A hard link to a
// file outside the workspace swapped in for it (same place, no symlink for
// the path checks to see), another file renamed over it, or the same file
// written since are all refused; the registered file still reads.
func TestArtifactServesOnlyRegisteredFile(t *testing.T) {
	t.Parallel()
	d := newDLEnv(t)
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
		if err := os.WriteFile(p+".new", []byte("report"), 0o644); err != nil {
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
		// Same size, same mtime: only the identity-free content changed,
		// through the same inode. Size and mtime restored, so only a
		// change of ctime could tell; the identity (dev, inode) is the
		// same, so this one is served: the registered file is still it.
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("REPORT"), 0o644); err != nil {
			return err
		}
		return os.Chtimes(p, fi.ModTime(), fi.ModTime())
	})
	for name, art := range map[string]*protocol.Artifact{
		"a hard link to a file outside swapped in": hardLink,
		"another file renamed over it":             renamed,
		"the file grown since":                     appended,
	} {
		_, ans := d.read(d.sess, art.ArtifactID)
		if ans.Type == protocol.TypeArtifactMeta {
			t.Errorf("%s: served (%+v)", name, ans.Payload)
			continue
		}
		if e := endError(t, ans); e.Code != protocol.CodeNotFound || !strings.Contains(e.Message, "changed") {
			t.Errorf("%s: %+v, want not_found saying the file changed", name, e)
		}
	}
	if _, ans := d.read(d.sess, rewritten.ArtifactID); ans.Type != protocol.TypeArtifactMeta {
		t.Errorf("the registered inode, same size and mtime: %s %+v", ans.Type, ans.Payload)
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
