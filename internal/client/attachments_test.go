package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/master/upload"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// recAdapter records the attachments of every turn it runs; it takes
// attachments (context_files) and refuses PDFs before a turn starts, as an
// agent without document support would.
type recAdapter struct {
	mu    sync.Mutex
	turns [][]attachment.File
}

func (a *recAdapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{
		ID: "rec", Name: "Rec", Modes: []string{protocol.ModeDefault}, InputTypes: []string{protocol.InputText},
		FileTokens: "literal", Settings: []string{adapter.SettingContextFiles},
	}
}

func (a *recAdapter) Open(context.Context, adapter.SessionConfig) (adapter.Session, error) {
	return &recSession{a: a}, nil
}

func (a *recAdapter) runs() [][]attachment.File {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][]attachment.File(nil), a.turns...)
}

type recSession struct{ a *recAdapter }

var _ adapter.AttachmentChecker = (*recSession)(nil)

func (s *recSession) CheckAttachments(files []attachment.File) *protocol.Error {
	for i, f := range files {
		if f.IsPDF() {
			return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.context_files[" + string(rune('0'+i)) + "]", Message: "this agent takes no PDFs"}
		}
	}
	return nil
}

func (s *recSession) Run(_ context.Context, turn adapter.Turn, _ adapter.Emit) (adapter.Result, error) {
	s.a.mu.Lock()
	s.a.turns = append(s.a.turns, turn.Attachments)
	s.a.mu.Unlock()
	return adapter.Result{Text: "ok", StopReason: "end_turn"}, nil
}
func (s *recSession) Answer(string, *protocol.InteractionResponse) error {
	return adapter.ErrUnknownInteraction
}
func (s *recSession) SetMode(string, json.RawMessage) error { return nil }
func (s *recSession) Compact(context.Context, *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	return &protocol.CompactionDone{}, nil
}
func (s *recSession) Close() error { return nil }

var attachPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// uploadsOn makes m serve GET /v1/uploads/… with the master's real upload
// service on a real SQLite file, holding one session s1 of UI token u1,
// and returns the service and a function storing an upload.
func uploadsOn(t *testing.T, m *fakeMaster) (*upload.Service, func(id string, data []byte)) {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "master.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.CreateSession(ctx, store.Session{ID: "s1", MachineID: "m1", WorkspaceID: "w", Adapter: "rec", Mode: "default", State: "idle", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateToken(ctx, store.Token{ID: "u1", Kind: store.TokenUI, Hash: bytes.Repeat([]byte{7}, 32)}); err != nil {
		t.Fatal(err)
	}
	svc, err := upload.New(upload.Config{Store: st, Key: bytes.Repeat([]byte("k"), 32)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/uploads/{upload_id}", svc.Serve)
	h := http.HandlerFunc(mux.ServeHTTP)
	m.uploads.Store(&h)
	put := func(id string, data []byte) {
		t.Helper()
		mt, err := attachment.Sniff(id, data)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutUpload(ctx, store.Upload{ID: id, SessionID: "s1", OwnerID: "u1", FileName: id, MimeType: mt,
			Size: int64(len(data)), Data: data, ExpiresAt: time.Now().Add(time.Hour)}, store.UploadQuota{}); err != nil {
			t.Fatal(err)
		}
	}
	return svc, put
}

// swapID points a granted upload URL at another upload, keeping the grant.
func swapID(files []protocol.ContextFile, id string) []protocol.ContextFile {
	_, grant, _ := protocol.ParseUploadURL(files[0].FileURL)
	files[0].FileURL = protocol.UploadURL(id, grant)
	return files
}

func promptFiles(files ...protocol.ContextFile) *protocol.Message {
	return control("s1", protocol.TypePromptRequest, &protocol.PromptRequest{PromptText: "look", InputType: protocol.InputText, ContextFiles: files})
}

// TestPromptAttachments: a prompt's uploads (granted by the master's real
// upload service) and data: URLs reach the adapter's turn with their exact
// bytes, in order; a prompt whose attachments cannot be had, or that the
// adapter's session refuses, is answered with a coded error naming the
// file, and no turn starts.
func TestPromptAttachments(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	svc, put := uploadsOn(t, m)
	put("upl_png", attachPNG)
	put("upl_pdf", []byte("%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"))
	rec := &recAdapter{}
	e := m.start(t, withAdapters(rec))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "rec")

	granted := func(msgID string, files ...protocol.ContextFile) []protocol.ContextFile {
		out, err := svc.Grant(ctx, "u1", "s1", msgID, files)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	req := promptFiles()
	req.Payload.(*protocol.PromptRequest).ContextFiles = granted(req.MessageID,
		protocol.ContextFile{FileURL: "ferry-upload:upl_png", FileName: "shot.png"},
		protocol.ContextFile{FileURL: "data:,hello%20there", FileName: "note.txt"})
	fc.send(req)
	msgs := fc.until(ctx, isType(protocol.TypeTextDone))
	if msgs[0].Type != protocol.TypeTurnStarted || msgs[0].ParentID != req.MessageID {
		t.Fatalf("first answer %s", msgs[0].Type)
	}
	runs := rec.runs()
	if len(runs) != 1 || len(runs[0]) != 2 {
		t.Fatalf("turns %+v", runs)
	}
	if f := runs[0][0]; !bytes.Equal(f.Data, attachPNG) || f.MediaType != "image/png" || f.Name != "shot.png" {
		t.Fatalf("first attachment %+v", f)
	}
	if f := runs[0][1]; string(f.Data) != "hello there" || f.MediaType != "text/plain" {
		t.Fatalf("second attachment %+v", f)
	}

	for name, tc := range map[string]struct {
		files       []protocol.ContextFile
		code, field string
	}{
		"a forged grant": {[]protocol.ContextFile{{FileURL: "ferry-upload:upl_png?grant=v1.9999999999.eA.eA", FileName: "a.png"}},
			protocol.CodeUnauthorized, "payload.context_files[0].file_url"},
		"another upload's grant": {swapID(granted("m", protocol.ContextFile{FileURL: "ferry-upload:upl_pdf", FileName: "a.png"}), "upl_png"),
			protocol.CodeUnauthorized, "payload.context_files[0].file_url"},
		"a type mismatch": {[]protocol.ContextFile{{FileURL: "data:,text", FileName: "a.png", MimeType: "image/png"}},
			protocol.CodeInvalidValue, "payload.context_files[0].mime_type"},
		"an https URL while fetching is off": {[]protocol.ContextFile{{FileURL: "https://files.example/a.png", FileName: "a.png"}},
			protocol.CodeUnsupported, "payload.context_files[0].file_url"},
		"the adapter's refusal": {granted("", protocol.ContextFile{FileURL: "ferry-upload:upl_pdf", FileName: "a.pdf"}),
			protocol.CodeUnsupported, "payload.context_files[0]"},
	} {
		p := promptFiles(tc.files...)
		if name == "the adapter's refusal" {
			p.Payload.(*protocol.PromptRequest).ContextFiles = granted(p.MessageID, protocol.ContextFile{FileURL: "ferry-upload:upl_pdf", FileName: "a.pdf"})
		}
		fc.send(p)
		msgs := fc.until(ctx, func(m *protocol.Message) bool { return m.ParentID == p.MessageID })
		last := msgs[len(msgs)-1]
		if last.Type != protocol.TypeError {
			t.Fatalf("%s: answered %s, want an error and no turn", name, last.Type)
		}
		if pe := last.Payload.(*protocol.Error); pe.Code != tc.code || pe.Field != tc.field {
			t.Errorf("%s: %+v, want %s at %s", name, pe, tc.code, tc.field)
		}
	}
	if n := len(rec.runs()); n != 1 {
		t.Fatalf("%d turns ran, want only the first", n)
	}
}

// TestPromptAttachmentURLsNeverReachPrivateAddresses: with fetching https
// URLs enabled, a URL whose host is (or resolves to) a loopback address is
// refused before any connection reaches the listener there; with it off,
// refused without trying.
func TestPromptAttachmentURLsNeverReachPrivateAddresses(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(attachPNG) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	for _, on := range []bool{false, true} {
		ctx := testContext(t)
		m := newFakeMaster(t)
		m.autoAck.Store(true)
		rec := &recAdapter{}
		e := m.start(t, withAdapters(rec), func(c *Config) { c.FetchAttachmentURLs = on })
		fc, _ := m.accept(ctx)
		e.open(ctx, fc, "s1", "rec")
		for _, u := range []string{srv.URL + "/a.png", "https://localhost:" + port + "/a.png", "https://10.0.0.7/a.png"} {
			p := promptFiles(protocol.ContextFile{FileURL: u, FileName: "a.png"})
			fc.send(p)
			pe := fc.errorFor(ctx, p.MessageID)
			want := protocol.CodeUnsupported
			if on {
				want = protocol.CodeInvalidValue
			}
			if pe.Code != want || pe.Field != "payload.context_files[0].file_url" {
				t.Errorf("fetching on=%v, %s: %+v, want %s", on, u, pe, want)
			}
		}
		if n := len(rec.runs()); n != 0 {
			t.Fatalf("fetching on=%v: %d turns ran", on, n)
		}
	}
	// The listener accepts in order: once a connection of our own is
	// counted, every earlier one would have been.
	before := conns.Load()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(5 * time.Second); conns.Load() == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sentinel connection was never accepted")
		}
	}
	if n := conns.Load() - 1; n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
}
