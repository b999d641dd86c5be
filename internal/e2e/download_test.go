package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Downloads end to end: a UI's WebSocket and plain HTTP GETs, the master on
// a real SQLite file, a real client whose test agent (handAdapter) hands
// files over with agent.artifact, all on loopback.

// handAdapter is a tiny test agent. A prompt "write PATH" followed by a
// line of content writes that content to PATH in the workspace; "hand
// PATH" uses a file the test made. Either way the file is handed to the
// user with agent.artifact, as ferry's own agent does after a Write.
type handAdapter struct{}

func (handAdapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{ID: "hand", Name: "hand over files", Modes: []string{protocol.ModeDefault},
		InputTypes: []string{protocol.InputText}, FileTokens: "literal"}
}

func (handAdapter) Open(_ context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	return &handSession{root: cfg.Workspace.Path}, nil
}

type handSession struct{ root string }

func (h *handSession) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	lit := turn.Prompt.Literal()
	first, content, _ := strings.Cut(lit, "\n")
	verb, path, _ := strings.Cut(first, " ")
	abs := filepath.Join(h.root, filepath.FromSlash(path))
	if verb == "write" {
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return adapter.Result{}, err
		}
		if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
			return adapter.Result{}, err
		}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return adapter.Result{}, err
	}
	mt := "application/octet-stream"
	if strings.HasSuffix(path, ".csv") {
		mt = "text/csv"
	}
	err = emit(ctx, protocol.TypeArtifact, &protocol.Artifact{TurnID: turn.ID, Path: path, FileName: filepath.Base(abs),
		Size: fi.Size(), MimeType: mt, ToolUseID: "toolu_" + verb})
	if err != nil {
		return adapter.Result{}, err
	}
	return adapter.Result{Text: "handed over " + path, StopReason: "end_turn"}, nil
}

func (h *handSession) Answer(string, *protocol.InteractionResponse) error {
	return adapter.ErrUnknownInteraction
}
func (h *handSession) SetMode(string, json.RawMessage) error { return nil }
func (h *handSession) Compact(context.Context, *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	return nil, errors.New("hand: no history")
}
func (h *handSession) Close() error { return nil }

// startHandClient runs a real client with the given adapters on a fresh
// workspace, through the proxy.
func (s *system) startHandClient(adapters ...adapter.Adapter) {
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
		StateDir: filepath.Join(t.TempDir(), "client"), MachineName: "test-machine", Adapters: adapters,
		Logger: slog.New(slog.DiscardHandler), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.client, s.cancelCli, s.cliDone = c, cancel, make(chan error, 1)
	go func() { s.cliDone <- c.Run(ctx) }()
}

// stopClient stops the client for good (the machine goes offline).
func (s *system) stopClient() {
	s.t.Helper()
	s.cancelCli()
	if err := <-s.cliDone; err != nil {
		s.t.Errorf("client run: %v", err)
	}
	_ = s.client.Close()
	s.cancelCli = nil
}

// startAdapterSession starts a session of adapterID and subscribes to it.
func (u *ui) startAdapterSession(adapterID string) protocol.SessionInfo {
	u.t.Helper()
	m := u.machine()
	r := u.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{
		MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: adapterID, Title: "downloads",
	}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		u.t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
	}
	u.subscribe(ans.Session.ID, 0, "")
	return ans.Session
}

// hand runs one prompt and returns the agent.artifact it produced.
func (u *ui) hand(sessionID, prompt string) *protocol.Artifact {
	u.t.Helper()
	u.prompt(sessionID, text(prompt))
	var art *protocol.Artifact
	u.collect(sessionID, func(m *protocol.Message) bool {
		if a, ok := m.Payload.(*protocol.Artifact); ok {
			art = a
		}
		if d, ok := m.Payload.(*protocol.TextDone); ok {
			if d.StopReason != "end_turn" {
				u.t.Fatalf("the turn %q ended with %s", prompt, d.StopReason)
			}
			return true
		}
		return false
	})
	if art == nil {
		u.t.Fatalf("no agent.artifact for %q", prompt)
	}
	return art
}

// links lists the session's artifacts with this UI's download links.
func (u *ui) links(sessionID string, p *protocol.ArtifactsList) []protocol.ArtifactLink {
	u.t.Helper()
	m := protocol.New(protocol.TypeArtifactsList, p)
	m.SessionID = sessionID
	r := u.request(m)
	a, ok := r.Payload.(*protocol.Artifacts)
	if !ok {
		u.t.Fatalf("ui.artifacts.list answered %s: %+v", r.Type, r.Payload)
	}
	return a.Artifacts
}

func (u *ui) link(sessionID, artifactID string) protocol.ArtifactLink {
	u.t.Helper()
	ls := u.links(sessionID, &protocol.ArtifactsList{ArtifactID: artifactID})
	if len(ls) != 1 || ls[0].Artifact.ArtifactID != artifactID {
		u.t.Fatalf("links for %s: %+v", artifactID, ls)
	}
	return ls[0]
}

// answer is a response whose body was read whole.
type answer struct {
	StatusCode    int
	Header        http.Header
	ContentLength int64
}

// get requests a download URL with the UI token as its login (nil header:
// none) and returns the response with its whole body.
func (s *system) get(method, path, login string, h http.Header) (answer, []byte) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.addr+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if login != "" {
		req.Header.Set("Authorization", "Bearer "+login)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return answer{resp.StatusCode, resp.Header, resp.ContentLength}, body
}

func TestDownloadExactBytes(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.startHandClient(handAdapter{})
	u := s.ui()
	sess := u.startAdapterSession("hand")
	content := "region,total\nnorth,12\nsouth,30\n\"quoted, cell\",7\n"
	art := u.hand(sess.ID, "write out/sales report.csv\n"+content)
	if art.Path != "out/sales report.csv" || art.FileName != "sales report.csv" || art.Size != int64(len(content)) ||
		!strings.HasPrefix(art.ArtifactID, "art_") {
		t.Fatalf("agent.artifact %+v", art)
	}
	links := u.links(sess.ID, &protocol.ArtifactsList{})
	if len(links) != 1 || links[0].Artifact != *art {
		t.Fatalf("ui.artifacts.list = %+v, want the one artifact %+v", links, art)
	}
	l := links[0]
	if !strings.HasPrefix(l.DownloadURL, "/v1/artifacts/ferry_dl_") {
		t.Fatalf("download_url %q", l.DownloadURL)
	}
	if exp, err := time.Parse(time.RFC3339Nano, l.ExpiresAt); err != nil || time.Until(exp) < 50*time.Minute || time.Until(exp) > time.Hour {
		t.Fatalf("expires_at %q: want about an hour from now", l.ExpiresAt)
	}

	resp, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, nil)
	if resp.StatusCode != http.StatusOK || string(body) != content {
		t.Fatalf("GET = %d %q, want 200 with the exact bytes", resp.StatusCode, body)
	}
	for k, want := range map[string]string{
		"Content-Type":           "text/csv",
		"Content-Length":         fmt.Sprint(len(content)),
		"Accept-Ranges":          "bytes",
		"Content-Disposition":    `attachment; filename="sales report.csv"; filename*=UTF-8''sales%20report.csv`,
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          "private, no-cache",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	etag := resp.Header.Get("ETag")
	if len(etag) < 3 || etag[0] != '"' || resp.Header.Get("Last-Modified") == "" {
		t.Fatalf("ETag %q, Last-Modified %q", etag, resp.Header.Get("Last-Modified"))
	}

	// HEAD: the same headers, no body.
	head, body := s.get(http.MethodHead, l.DownloadURL, s.uiToken, nil)
	if head.StatusCode != http.StatusOK || len(body) != 0 || head.Header.Get("ETag") != etag || head.ContentLength != int64(len(content)) {
		t.Fatalf("HEAD = %d, %d body bytes, ETag %q, length %d", head.StatusCode, len(body), head.Header.Get("ETag"), head.ContentLength)
	}
	// The login cookie works as well as the bearer token: a browser holds
	// its token's cookie share there (the whole token never is).
	cookie, _, err := master.SplitUISecret(s.uiToken)
	if err != nil {
		t.Fatal(err)
	}
	resp, body = s.get(http.MethodGet, l.DownloadURL, "", http.Header{"Cookie": {master.CookieName + "=" + cookie}})
	if resp.StatusCode != http.StatusOK || string(body) != content {
		t.Fatalf("GET with the cookie = %d %q", resp.StatusCode, body)
	}
	// A link can be used again until it expires, and a second listing
	// issues another link for the same file.
	again := u.link(sess.ID, art.ArtifactID)
	if again.DownloadURL == l.DownloadURL {
		t.Fatal("a second listing handed out the same token")
	}
	for _, url := range []string{l.DownloadURL, again.DownloadURL} {
		if resp, body := s.get(http.MethodGet, url, s.uiToken, nil); resp.StatusCode != http.StatusOK || string(body) != content {
			t.Fatalf("GET %s again = %d %q", url, resp.StatusCode, body)
		}
	}
}

// TestDownloadRefusals: every token that is not this UI's own, live token
// for the artifact gets the same 404; no login gets 401.
func TestDownloadRefusals(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.startHandClient(handAdapter{})
	u := s.ui()
	sess := u.startAdapterSession("hand")
	art := u.hand(sess.ID, "write report.csv\nsecret,42\n")
	good := u.link(sess.ID, art.ArtifactID)
	ctx := context.Background()

	_, want := s.get(http.MethodGet, "/v1/artifacts/ferry_dl_"+strings.Repeat("A", 43), s.uiToken, nil)
	if !strings.Contains(string(want), `"code":"not_found"`) {
		t.Fatalf("a forged token's body %s", want)
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	forged := "/v1/artifacts/ferry_dl_" + base64.RawURLEncoding.EncodeToString(raw[:])

	// Expired: a token for this UI and artifact whose time is up.
	uiTok, err := auth.Verify(ctx, s.st, s.uiToken, store.TokenUI)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = rand.Read(raw[:])
	expired := "ferry_dl_" + base64.RawURLEncoding.EncodeToString(raw[:])
	if err := s.st.CreateDownloadTokens(ctx, []store.DownloadToken{{ID: "expired", Hash: auth.Hash(expired), SessionID: sess.ID,
		ArtifactID: art.ArtifactID, OwnerID: uiTok.ID, CreatedAt: time.Now().Add(-2 * time.Hour), ExpiresAt: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	// Revoked: a link handed out, then revoked.
	revokedLink := u.link(sess.ID, art.ArtifactID)
	dl, err := s.st.DownloadTokenByHash(ctx, auth.Hash(strings.TrimPrefix(revokedLink.DownloadURL, "/v1/artifacts/")))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.st.RevokeDownloadToken(ctx, dl.ID); err != nil {
		t.Fatal(err)
	}
	// Other users: one whose UI token sees only another machine, one that
	// sees every machine; neither may use this UI's link.
	otherMachine, _, err := auth.Issue(ctx, s.st, store.TokenUI, "other user", time.Hour, auth.WithMachines("another-machine"))
	if err != nil {
		t.Fatal(err)
	}
	otherAll, _, err := auth.Issue(ctx, s.st, store.TokenUI, "other browser", time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	for name, tc := range map[string]struct{ path, login string }{
		"forged":                 {forged, s.uiToken},
		"malformed":              {"/v1/artifacts/not-a-token", s.uiToken},
		"expired":                {"/v1/artifacts/" + expired, s.uiToken},
		"revoked":                {revokedLink.DownloadURL, s.uiToken},
		"another user's (scope)": {good.DownloadURL, otherMachine},
		"another UI token's":     {good.DownloadURL, otherAll},
		"a login token as path":  {"/v1/artifacts/" + s.uiToken, s.uiToken},
	} {
		resp, body := s.get(http.MethodGet, tc.path, tc.login, nil)
		if resp.StatusCode != http.StatusNotFound || !bytes.Equal(body, want) {
			t.Errorf("%s: %d %s, want 404 %s", name, resp.StatusCode, body, want)
		}
		if strings.Contains(string(body), "secret") || resp.Header.Get("Content-Disposition") != "" {
			t.Errorf("%s: the refusal leaks the file", name)
		}
	}
	// Without a login the token alone is worth nothing.
	for name, h := range map[string]http.Header{
		"no login":       nil,
		"forged cookie":  {"Cookie": {"ferry_session=ferry_ui_" + strings.Repeat("B", 43)}},
		"client token":   {"Authorization": {"Bearer " + mustClientToken(t, s)}},
		"download token": {"Authorization": {"Bearer " + strings.TrimPrefix(good.DownloadURL, "/v1/artifacts/")}},
	} {
		resp, body := s.get(http.MethodGet, good.DownloadURL, "", h)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "secret") {
			t.Errorf("%s: %d %s, want 401", name, resp.StatusCode, body)
		}
	}
	// Revoking the owner's UI token revokes its links: its login fails
	// and the link is gone from the store.
	if err := s.st.RevokeToken(ctx, uiTok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.st.DownloadTokenByHash(ctx, auth.Hash(strings.TrimPrefix(good.DownloadURL, "/v1/artifacts/"))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a link of a revoked UI token is still stored: %v", err)
	}
	if resp, _ := s.get(http.MethodGet, good.DownloadURL, s.uiToken, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked owner: %d, want 401", resp.StatusCode)
	}
}

func mustClientToken(t *testing.T, s *system) string {
	secret, _, err := auth.Issue(context.Background(), s.st, store.TokenClient, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// TestDownloadOnlyTheRegisteredFile: a request names no path, so a token
// for artifact X yields X whatever the URL adds; a UI cannot send the
// client a read; a file swapped for a symlink to /etc/passwd after it was
// registered is refused.
func TestDownloadOnlyTheRegisteredFile(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.startHandClient(handAdapter{})
	u := s.ui()
	sess := u.startAdapterSession("hand")
	if err := os.WriteFile(filepath.Join(s.workspace, "private.key"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	x := u.hand(sess.ID, "write x.txt\nthe x file")
	l := u.link(sess.ID, x.ArtifactID)
	for _, path := range []string{
		l.DownloadURL,
		l.DownloadURL + "?path=private.key&artifact_id=private.key",
		l.DownloadURL + "/../private.key",
		l.DownloadURL + "%2F..%2Fprivate.key",
	} {
		resp, body := s.get(http.MethodGet, path, s.uiToken, nil)
		if strings.Contains(string(body), "PRIVATE") {
			t.Fatalf("GET %s served the unregistered file", path)
		}
		if resp.StatusCode == http.StatusOK && string(body) != "the x file" {
			t.Fatalf("GET %s = %q", path, body)
		}
	}
	// A UI cannot ask the client for a read itself: the master refuses the
	// type from a UI before anything else.
	read := protocol.New(protocol.TypeArtifactRead, &protocol.ArtifactRead{RequestID: protocol.NewID(), ArtifactID: x.ArtifactID})
	read.SessionID = sess.ID
	if r := u.request(read); r.Type != protocol.TypeError || r.Payload.(*protocol.Error).Code != protocol.CodeWrongDirection {
		t.Fatalf("a UI's control.artifact.read got %s %+v, want wrong_direction", r.Type, r.Payload)
	}

	// The registered file is replaced by a symlink to /etc/passwd (or any
	// file outside the workspace).
	outside := "/etc/passwd"
	if _, err := os.Stat(outside); err != nil {
		outside = filepath.Join(t.TempDir(), "outside")
		if err := os.WriteFile(outside, []byte("root:x:0:0"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	xp := filepath.Join(s.workspace, "x.txt")
	if err := os.Remove(xp); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, xp); err != nil {
		t.Fatal(err)
	}
	// The client serves the snapshot it took at registration: the agent's
	// version, never what the path leads to now. (Without a snapshot the
	// swapped file is refused: internal/client TestArtifactReadRefused.)
	resp, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, nil)
	if resp.StatusCode != http.StatusOK || string(body) != "the x file" || resp.Header.Get("Ferry-Artifact-Changed") != "" {
		t.Fatalf("a symlink swapped to %s: %d %q, want the agent's version unmarked", outside, resp.StatusCode, body)
	}
	// A hard link to the file outside put in the registered file's place:
	// no symlink for the path checks to see, but not the registered file.
	z := u.hand(sess.ID, "write z.txt\nthe z file")
	lz := u.link(sess.ID, z.ArtifactID)
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$hash"), 0o600); err != nil {
		t.Fatal(err)
	}
	zp := filepath.Join(s.workspace, "z.txt")
	if err := os.Remove(zp); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, zp); err != nil {
		t.Fatal(err)
	}
	if resp, body := s.get(http.MethodGet, lz.DownloadURL, s.uiToken, nil); resp.StatusCode != http.StatusOK || string(body) != "the z file" {
		t.Fatalf("a hard link to a file outside swapped in: %d %q, want the agent's version", resp.StatusCode, body)
	}
	// A directory of the path swapped for a link outside is refused too.
	y := u.hand(sess.ID, "write sub/y.txt\nthe y file")
	ly := u.link(sess.ID, y.ArtifactID)
	if err := os.RemoveAll(filepath.Join(s.workspace, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(s.workspace, "sub")); err != nil {
		t.Fatal(err)
	}
	if resp, body := s.get(http.MethodGet, ly.DownloadURL, s.uiToken, nil); resp.StatusCode != http.StatusOK || string(body) != "the y file" {
		t.Fatalf("a parent directory swapped for a link outside: %d %q, want the agent's version", resp.StatusCode, body)
	}
}

func TestDownloadRangeAndETag(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.startHandClient(handAdapter{})
	u := s.ui()
	sess := u.startAdapterSession("hand")
	content := strings.Repeat("0123456789", 20000) // 200000 bytes: several chunks
	art := u.hand(sess.ID, "write data.bin\n"+content)
	l := u.link(sess.ID, art.ArtifactID)
	full, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, nil)
	if full.StatusCode != http.StatusOK || string(body) != content {
		t.Fatalf("GET = %d, %d bytes", full.StatusCode, len(body))
	}
	etag := full.Header.Get("ETag")

	// Resume: the rest from an offset inside a chunk, with If-Range.
	resp, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, http.Header{"Range": {"bytes=70001-"}, "If-Range": {etag}})
	if resp.StatusCode != http.StatusPartialContent || string(body) != content[70001:] ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 70001-%d/%d", len(content)-1, len(content)) {
		t.Fatalf("resume = %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
	}
	for h, want := range map[string]string{"bytes=0-0": content[:1], "bytes=-5": content[len(content)-5:], "bytes=65530-65545": content[65530:65546]} {
		resp, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, http.Header{"Range": {h}})
		if resp.StatusCode != http.StatusPartialContent || string(body) != want {
			t.Errorf("Range %s = %d %q", h, resp.StatusCode, body)
		}
	}
	resp, _ = s.get(http.MethodGet, l.DownloadURL, s.uiToken, http.Header{"Range": {fmt.Sprintf("bytes=%d-", len(content))}})
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(content)) {
		t.Fatalf("a range past the end = %d %q, want 416", resp.StatusCode, resp.Header.Get("Content-Range"))
	}
	resp, body = s.get(http.MethodGet, l.DownloadURL, s.uiToken, http.Header{"If-None-Match": {etag}})
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != etag {
		t.Fatalf("If-None-Match = %d, %d bytes", resp.StatusCode, len(body))
	}

	// The file is replaced: the version the agent handed over (its
	// snapshot) is still served, under the same ETag, unmarked.
	changed := "a new version"
	if err := os.WriteFile(filepath.Join(s.workspace, "data.bin.tmp"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(s.workspace, "data.bin.tmp"), filepath.Join(s.workspace, "data.bin")); err != nil {
		t.Fatal(err)
	}
	resp, body = s.get(http.MethodGet, l.DownloadURL, s.uiToken, http.Header{"If-None-Match": {etag}})
	if resp.StatusCode != http.StatusNotModified || resp.Header.Get("ETag") != etag {
		t.Fatalf("after a replacement, If-None-Match = %d %q, want 304 for the agent's version", resp.StatusCode, body)
	}
	resp, body = s.get(http.MethodGet, l.DownloadURL, s.uiToken, nil)
	if resp.StatusCode != http.StatusOK || string(body) != content || resp.Header.Get("Ferry-Artifact-Changed") != "" {
		t.Fatalf("after a replacement = %d, %d bytes, marker %q; want the agent's version", resp.StatusCode, len(body), resp.Header.Get("Ferry-Artifact-Changed"))
	}
}

func TestDownloadClientOffline(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.startHandClient(handAdapter{})
	u := s.ui()
	sess := u.startAdapterSession("hand")
	art := u.hand(sess.ID, "write a.txt\nhello")
	l := u.link(sess.ID, art.ArtifactID)
	s.stopClient()
	// The master may learn that the client left before the download (not
	// connected) or while it asks for the file (went offline): the same
	// answer either way.
	resp, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, nil)
	var e protocol.Error
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || e.Code != protocol.CodeClientOffline ||
		!strings.Contains(e.Message, "connected") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("client offline: %d %s, want 503 client_offline with Retry-After", resp.StatusCode, body)
	}
}

// bigFile makes a sparse file of size bytes with a few marked blocks and
// returns its SHA-256.
func bigFile(t *testing.T, path string, size int64) [32]byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, size/2 + 12345, size - 4096} {
		mark := bytes.Repeat([]byte(fmt.Sprintf("<%d>", off)), 4096)[:4096]
		if _, err := f.WriteAt(mark, off); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// heapPeak samples the heap in use until stopped and reports its peak.
type heapPeak struct {
	stop chan struct{}
	done chan uint64
}

func sampleHeap() *heapPeak {
	p := &heapPeak{stop: make(chan struct{}), done: make(chan uint64, 1)}
	go func() {
		var peak uint64
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-p.stop:
				p.done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *heapPeak) end() uint64 {
	close(p.stop)
	return <-p.done
}

// TestDownloadGigabyteBoundedMemory downloads a 1 GiB artifact (sparse)
// through master and client in this one process and checks that the heap
// never grows by more than a small multiple of the download window: both
// sides stream, neither holds the file. A Range request then resumes it
// from the middle.
func TestDownloadGigabyteBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1 GiB download")
	}
	size := int64(1 << 30)
	if raceEnabled {
		size = 64 << 20 // the race detector makes every byte slow; the bound is the same
	}
	s := newSystem(t, 10000)
	s.startHandClient(handAdapter{})
	u := s.ui()
	sess := u.startAdapterSession("hand")
	s.workspace = s.client.Workspaces()[0].Path
	want := bigFile(t, filepath.Join(s.workspace, "big.bin"), size)
	art := u.hand(sess.ID, "hand big.bin")
	if art.Size != size {
		t.Fatalf("registered size %d", art.Size)
	}
	l := u.link(sess.ID, art.ArtifactID)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := sampleHeap()
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.addr+l.DownloadURL, nil)
	req.Header.Set("Authorization", "Bearer "+s.uiToken)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	_ = resp.Body.Close()
	elapsed := time.Since(start)
	top := peak.end()
	if err != nil || n != size || resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	if [32]byte(h.Sum(nil)) != want {
		t.Fatal("the downloaded bytes differ from the file")
	}
	growth := int64(top) - int64(before.HeapInuse)
	t.Logf("%d MiB in %s (%.0f MiB/s); heap in use %d MiB before, peak %d MiB (growth %.1f MiB)",
		size>>20, elapsed.Round(time.Millisecond), float64(size>>20)/elapsed.Seconds(),
		before.HeapInuse>>20, top>>20, float64(growth)/(1<<20))
	if growth > 64<<20 {
		t.Fatalf("the heap grew by %d MiB during the download; master and client must stream", growth>>20)
	}

	// Resume from the middle: exactly the second half.
	half := size/2 + 12345 - 100
	req, _ = http.NewRequest(http.MethodGet, "http://"+s.addr+l.DownloadURL, nil)
	req.Header.Set("Authorization", "Bearer "+s.uiToken)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", half))
	req.Header.Set("If-Range", resp.Header.Get("ETag"))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(s.workspace, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wantHalf := sha256.New()
	if _, err := io.Copy(wantHalf, io.NewSectionReader(f, half, size-half)); err != nil {
		t.Fatal(err)
	}
	gotHalf := sha256.New()
	n, err = io.Copy(gotHalf, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusPartialContent || n != size-half || !bytes.Equal(gotHalf.Sum(nil), wantHalf.Sum(nil)) {
		t.Fatalf("resume: %d, %d bytes of %d, %v", resp.StatusCode, n, size-half, err)
	}
}

// TestDownloadCutShort: when the client's connection drops during a
// download, the downloader sees a failed (short) response, never a
// complete-looking wrong one; when the downloader goes away, the client
// stops reading (its download slots come back, so more downloads than it
// serves at once still work afterwards).
func TestDownloadCutShort(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.startHandClient(handAdapter{})
	u := s.ui()
	sess := u.startAdapterSession("hand")
	s.workspace = s.client.Workspaces()[0].Path
	size := int64(64 << 20)
	bigFile(t, filepath.Join(s.workspace, "big.bin"), size)
	art := u.hand(sess.ID, "hand big.bin")
	l := u.link(sess.ID, art.ArtifactID)

	open := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.addr+l.DownloadURL, nil)
		req.Header.Set("Authorization", "Bearer "+s.uiToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %v", err)
		}
		return resp
	}
	resp := open()
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	s.proxy.cut()
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err == nil || n+1<<20 >= size {
		t.Fatalf("a download whose client dropped ended with %v after %d more bytes; want an error before the end", err, n)
	}

	// Abandon more downloads than the client serves at once; each cancel
	// must free its slot, so the next one still works.
	u.machine() // the client is back
	for i := range 40 {
		var resp *http.Response
		deadline := time.Now().Add(wait)
		for {
			req, _ := http.NewRequest(http.MethodGet, "http://"+s.addr+l.DownloadURL, nil)
			req.Header.Set("Authorization", "Bearer "+s.uiToken)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if r.StatusCode == http.StatusOK {
				resp = r
				break
			}
			_, _ = io.Copy(io.Discard, r.Body)
			_ = r.Body.Close()
			if r.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("download %d: %d", i, r.StatusCode)
			}
			time.Sleep(10 * time.Millisecond) // a cancel is still on its way
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 100<<10)); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
}

// TestAgentArtifactsDownloadEndToEnd: ferry's own agent, on the fake model
// provider through the real SDK, writes a CSV and edits a report; the UI
// gets one agent.artifact for each, ui.artifacts.list gives their links,
// and the downloads give exactly the bytes on disk.
func TestAgentArtifactsDownloadEndToEnd(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	s := newSystem(t, 10000)
	s.workspace = t.TempDir()
	report := "# Sales\n\nTotal: TBD\n"
	if err := os.WriteFile(filepath.Join(s.workspace, "report.md"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	s.startHandClient(builtin.New(builtin.Config{
		Getenv:    func(string) string { return "" },
		Provider:  provider.Config{Provider: string(fake.Anthropic), Model: "test-model", BaseURL: srv.BaseURL(fake.Anthropic), APIKey: "test-key"},
		Rules:     permission.Rules{Allow: []permission.Rule{{Tool: "Write"}, {Tool: "Edit"}}},
		Artifacts: true,
	}))
	csv := "region,total\nnorth,1\nsouth,2\n"
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "out/sales.csv", "content": csv}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "report.md"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "report.md", "old_string": "Total: TBD", "new_string": "Total: 3"}}}},
		fake.Reply{Text: []string{"The CSV is written and the report updated."}},
	)
	u := s.ui()
	sess := u.startAdapterSession("builtin")
	u.prompt(sess.ID, text("write the sales CSV and update the report"))
	var arts []*protocol.Artifact
	u.collect(sess.ID, func(m *protocol.Message) bool {
		if a, ok := m.Payload.(*protocol.Artifact); ok {
			arts = append(arts, a)
		}
		if d, ok := m.Payload.(*protocol.TextDone); ok {
			if d.StopReason != "end_turn" {
				t.Fatalf("the turn ended with %s: %q", d.StopReason, d.Text)
			}
			return true
		}
		return false
	})
	if len(arts) != 2 || arts[0].Path != "out/sales.csv" || arts[1].Path != "report.md" || arts[0].ToolUseID == "" {
		t.Fatalf("agent.artifact events %+v, want out/sales.csv then report.md", arts)
	}
	links := u.links(sess.ID, &protocol.ArtifactsList{})
	if len(links) != 2 {
		t.Fatalf("ui.artifacts.list gave %d links", len(links))
	}
	for i, l := range links {
		if l.Artifact != *arts[i] {
			t.Fatalf("link %d is for %+v, want %+v", i, l.Artifact, arts[i])
		}
		want, err := os.ReadFile(filepath.Join(s.client.Workspaces()[0].Path, filepath.FromSlash(l.Artifact.Path)))
		if err != nil {
			t.Fatal(err)
		}
		resp, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, nil)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
			t.Fatalf("GET %s = %d %q, want %q", l.Artifact.Path, resp.StatusCode, body, want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(s.workspace, "report.md")); string(got) != "# Sales\n\nTotal: 3\n" {
		t.Fatalf("the report was not edited: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(s.workspace, "out", "sales.csv")); string(got) != csv {
		t.Fatalf("the CSV on disk: %q", got)
	}
}
