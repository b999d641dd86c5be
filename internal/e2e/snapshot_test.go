package e2e_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/store"
)

// startSnapClient is startHandClient with the client's artifact snapshots
// bounded to total bytes per workspace.
func (s *system) startSnapClient(total int64) {
	t := s.t
	t.Helper()
	if s.workspace == "" {
		s.workspace = t.TempDir()
	}
	secret, _, err := auth.Issue(context.Background(), s.st, store.TokenClient, "test client", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{
		MasterURL: "http://" + s.proxy.addr(), Token: secret, Workspaces: []string{s.workspace},
		StateDir: filepath.Join(t.TempDir(), "client"), MachineName: "test-machine", Adapters: []adapter.Adapter{handAdapter{}},
		Logger: slog.New(slog.DiscardHandler), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		SnapshotTotal: total,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.client, s.cancelCli, s.cliDone = c, cancel, make(chan error, 1)
	go func() { s.cliDone <- c.Run(ctx) }()
}

// TestDownloadSnapshotEvictedIsMarked: the real client and master over
// HTTP. With room for one snapshot, the second artifact evicts the
// first's; once both files changed, the first downloads as it is now with
// Ferry-Artifact-Changed: 1 on GET and HEAD, and the second still
// downloads the agent's bytes, unmarked.
func TestDownloadSnapshotEvictedIsMarked(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.startSnapClient(100)
	u := s.ui()
	sess := u.startAdapterSession("hand")
	first := strings.Repeat("1", 60)
	second := strings.Repeat("2", 60)
	a := u.hand(sess.ID, "write a.txt\n"+first)
	b := u.hand(sess.ID, "write b.txt\n"+second)
	for name, content := range map[string]string{"a.txt": "a, edited", "b.txt": "b, edited"} {
		if err := os.WriteFile(filepath.Join(s.workspace, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	la, lb := u.link(sess.ID, a.ArtifactID), u.link(sess.ID, b.ArtifactID)
	resp, body := s.get(http.MethodGet, la.DownloadURL, s.uiToken, nil)
	if resp.StatusCode != http.StatusOK || string(body) != "a, edited" || resp.Header.Get("Ferry-Artifact-Changed") != "1" {
		t.Fatalf("the evicted one: %d %q, marker %q; want the current file marked", resp.StatusCode, body, resp.Header.Get("Ferry-Artifact-Changed"))
	}
	if resp, _ := s.get(http.MethodHead, la.DownloadURL, s.uiToken, nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Ferry-Artifact-Changed") != "1" {
		t.Fatalf("HEAD of the evicted one: %d, marker %q", resp.StatusCode, resp.Header.Get("Ferry-Artifact-Changed"))
	}
	resp, body = s.get(http.MethodGet, lb.DownloadURL, s.uiToken, nil)
	if resp.StatusCode != http.StatusOK || string(body) != second || resp.Header.Get("Ferry-Artifact-Changed") != "" {
		t.Fatalf("the kept one: %d %q, marker %q; want the agent's bytes unmarked", resp.StatusCode, body, resp.Header.Get("Ferry-Artifact-Changed"))
	}
	if resp, _ := s.get(http.MethodHead, lb.DownloadURL, s.uiToken, nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Ferry-Artifact-Changed") != "" {
		t.Fatalf("HEAD of the kept one: %d, marker %q", resp.StatusCode, resp.Header.Get("Ferry-Artifact-Changed"))
	}
}
