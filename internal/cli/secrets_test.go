package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/push/pushtest"
	"github.com/ferry-dev/ferry/protocol"
)

// anySecret is the shape of every credential ferry issues (tokens of
// internal/auth, download links, the browser's two shares): the test looks
// for it beside the exact secrets it knows, to catch those it cannot know
// (the in-process client's token lives only in ferry up's memory).
var anySecret = regexp.MustCompile(`ferry_[a-z]+_[A-Za-z0-9_-]{43}`)

func randomSecret(kind string) string {
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	return "ferry_" + kind + "_" + base64.RawURLEncoding.EncodeToString(raw[:])
}

// get does one request to the process and returns the status and body.
func (u *upProcess) do(t *testing.T, method, path string, h http.Header, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// connectProcess runs `ferry connect --verbose` against u with token (in
// FERRY_TOKEN) until stop is called; it returns its output so far.
func connectProcess(t *testing.T, bin string, u *upProcess, token string) (stop func() string) {
	t.Helper()
	dir := t.TempDir()
	out := &syncBuffer{}
	cmd := exec.Command(bin, "connect", "--verbose", "--master", u.base, "--workspace", dir,
		"--state", filepath.Join(dir, "state"), "--name", "second", "--agent", "echo")
	cmd.Env = append(os.Environ(), "FERRY_TOKEN="+token, "HOME="+dir)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() string {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return out.String()
	}
}

// TestNoSecretInLogs (issue 16, item 7): a whole session of `ferry up
// --verbose` (a real process, debug logs) — a login exchange and refused
// logins, browser and bearer UIs, a second machine's client, a refused
// client token, a prompt to ferry's own agent that writes a file, its
// download link made and used, downloads refused with a bad link, a bad
// login and a revoked one, a push subscription whose deliveries fail (the
// push service closes the connection, then answers 500) — and no
// credential it created or used appears in any output: stderr, the logs,
// ferry connect's output, or stdout beyond the one login URL ferry up
// prints for the user; nor does the push endpoint's path, a capability
// (issue 31, item 1.4).
func TestNoSecretInLogs(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	srv := fake.New(t)
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "out/report.txt", "content": "the report\n"}}}},
		fake.Reply{Text: []string{"Written."}},
	)
	u := startUpProcess(t, bin, "", []string{
		"FERRY_PROVIDER=anthropic", "FERRY_MODEL=test-model", "ANTHROPIC_BASE_URL=" + srv.BaseURL(fake.Anthropic), "ANTHROPIC_API_KEY=test-key",
	}, "--verbose", "--agent", "builtin", "--agent", "echo", "--push-allow-loopback")
	secrets := map[string]string{"login URL token": u.loginSecret}
	var outputs []string // what ferry printed besides u's own output

	// Logins: a forged one (GET and POST), then the real exchange.
	forged := randomSecret("login")
	secrets["forged login"] = forged
	if code, _, _ := u.do(t, http.MethodGet, "/login?token="+forged, nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("forged login GET: %d", code)
	}
	form := http.Header{"Origin": {u.base}, "Content-Type": {"application/x-www-form-urlencoded"}}
	if code, _, _ := u.do(t, http.MethodPost, "/login", form, strings.NewReader("token="+forged)); code != http.StatusUnauthorized {
		t.Fatalf("forged login POST: %d", code)
	}
	if code, _, _ := u.do(t, http.MethodGet, "/login?token="+u.loginSecret, http.Header{"Sec-Fetch-Site": {"none"}}, nil); code != http.StatusOK {
		t.Fatalf("login page: %d", code)
	}
	code, h, body := u.do(t, http.MethodPost, "/login", form, strings.NewReader("token="+url.QueryEscape(u.loginSecret)))
	if code != http.StatusOK {
		t.Fatalf("login exchange: %d %s", code, body)
	}
	var cookie, cookieName string
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if strings.HasPrefix(c.Name, "ferry_session_") { // named per master
			cookie, cookieName = c.Value, c.Name
		}
	}
	key := regexp.MustCompile(`data-key="([^"]+)"`).FindStringSubmatch(body)
	if cookie == "" || key == nil {
		t.Fatalf("the login exchange gave no session: %v %s", h, body)
	}
	secrets["cookie share"], secrets["key share"] = cookie, html.UnescapeString(key[1])
	if code, _, _ := u.do(t, http.MethodPost, "/login", form, strings.NewReader("token="+url.QueryEscape(u.loginSecret))); code != http.StatusUnauthorized {
		t.Fatalf("a login used twice: %d", code)
	}

	// The browser's UI (both shares), and a bearer UI.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bconn, resp, err := websocket.Dial(ctx, strings.Replace(u.base, "http", "ws", 1)+"/v1/ui", &websocket.DialOptions{
		HTTPHeader:   http.Header{"Cookie": {cookieName + "=" + cookie}, "Origin": {u.base}},
		Subprotocols: []string{"ferry.ui", secrets["key share"]},
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("browser UI: %v", err)
	}
	defer func() { _ = bconn.CloseNow() }()
	bconn.SetReadLimit(protocol.MaxMessageBytes)
	(&uiConn{t: t, ctx: ctx, conn: bconn}).machine()

	uiTok := u.uiToken(t, bin)
	secrets["ui token"] = uiTok
	c := u.dialUI(t, uiTok)

	// A device subscribed to notifications whose push service fails:
	// it closes the connection, then answers 500. The endpoint's path is
	// the device's capability.
	pushSrv := pushtest.New(t)
	device := pushSrv.Subscribe()
	pushSrv.Script(device, pushtest.Reply{Close: true}, pushtest.Reply{Status: http.StatusInternalServerError})
	endpointPath := strings.TrimPrefix(device.Endpoint, pushSrv.URL)
	subBody := fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q},"label":"phone"}`,
		device.Endpoint, pushtest.B64(device.P256dh), pushtest.B64(device.Auth))
	if code, _, body := u.do(t, http.MethodPost, "/v1/push/subscriptions",
		http.Header{"Authorization": {"Bearer " + uiTok}, "Content-Type": {"application/json"}}, strings.NewReader(subBody)); code != http.StatusCreated {
		t.Fatalf("push subscription: %d %s", code, body)
	}
	if code, _, _ := u.do(t, http.MethodGet, "/v1/ui", http.Header{"Authorization": {"Bearer " + randomSecret("ui")}}, nil); code != http.StatusUnauthorized {
		t.Fatalf("forged UI token: %d", code)
	}

	// A second machine with its own client token, then refused once the
	// token is revoked, and a forged client token refused.
	clientTok := strings.TrimSpace(ferryCmd(t, bin, "token", "create", "--kind", "client", "--name", "second", "--db", u.db))
	secrets["client token"] = clientTok
	stop := connectProcess(t, bin, u, clientTok)
	waitMachines(t, c, 2)
	outputs = append(outputs, stop())
	list := ferryCmd(t, bin, "token", "list", "--db", u.db)
	id := regexp.MustCompile(`(?m)^(\S+)\tclient\tsecond\t`).FindStringSubmatch(list)
	if id == nil {
		t.Fatalf("token list: %q", list)
	}
	ferryCmd(t, bin, "token", "revoke", "--db", u.db, id[1])
	for _, tok := range []string{clientTok, randomSecret("client")} {
		secrets["refused client "+tok[:16]] = tok
		stop := connectProcess(t, bin, u, tok)
		time.Sleep(2 * time.Second) // a few refusals
		outputs = append(outputs, stop())
	}
	if code, _, _ := u.do(t, http.MethodGet, "/v1/client", http.Header{"Authorization": {"Bearer " + clientTok}}, nil); code != http.StatusUnauthorized {
		t.Fatalf("revoked client token: %d", code)
	}

	// A prompt to ferry's own agent that writes a file: an artifact.
	m := c.machineNamed(t, "")
	r := c.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID, Adapter: "builtin"}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		t.Fatalf("session start answered %s: %+v", r.Type, r.Payload)
	}
	sid := ans.Session.ID
	sub := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{})
	sub.SessionID = sid
	c.request(sub)
	p := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{
		Segments:        []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: "write the report"}},
		ConfigOverrides: &protocol.ConfigOverrides{AllowedTools: []string{"Write"}},
	})
	p.SessionID = sid
	c.send(p)
	for {
		msg := c.next(func(m *protocol.Message) bool { return m.SessionID == sid })
		if d, ok := msg.Payload.(*protocol.TextDone); ok {
			if d.StopReason != "end_turn" {
				t.Fatalf("turn ended %+v", d)
			}
			break
		}
	}
	// The finished turn is notified: both deliveries fail.
	for deadline := time.Now().Add(30 * time.Second); len(pushSrv.Attempts(device)) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d push deliveries, want 2 (a closed connection, a 500)", len(pushSrv.Attempts(device)))
		}
	}
	lr := protocol.New(protocol.TypeArtifactsList, &protocol.ArtifactsList{})
	lr.SessionID = sid
	r = c.request(lr)
	arts, ok := r.Payload.(*protocol.Artifacts)
	if !ok || len(arts.Artifacts) != 1 {
		t.Fatalf("artifacts list answered %s: %+v", r.Type, r.Payload)
	}
	link := arts.Artifacts[0].DownloadURL
	secrets["download link"] = strings.TrimPrefix(link, "/v1/artifacts/")
	bearer := func(s string) http.Header { return http.Header{"Authorization": {"Bearer " + s}} }
	if code, _, body := u.do(t, http.MethodGet, link, bearer(uiTok), nil); code != http.StatusOK || body != "the report\n" {
		t.Fatalf("download: %d %q", code, body)
	}
	if code, _, body := u.do(t, http.MethodGet, link, http.Header{"Cookie": {cookieName + "=" + cookie}}, nil); code != http.StatusNotFound && code != http.StatusUnauthorized {
		t.Fatalf("another login's download: %d %q", code, body)
	}
	badLink := randomSecret("dl")
	secrets["forged link"] = badLink
	if code, _, _ := u.do(t, http.MethodGet, "/v1/artifacts/"+badLink, bearer(uiTok), nil); code != http.StatusNotFound {
		t.Fatalf("forged link: %d", code)
	}
	forgedUI := randomSecret("ui")
	secrets["forged ui"] = forgedUI
	if code, _, _ := u.do(t, http.MethodGet, link, bearer(forgedUI), nil); code != http.StatusUnauthorized {
		t.Fatalf("download with a forged login: %d", code)
	}
	list = ferryCmd(t, bin, "token", "list", "--db", u.db)
	id = regexp.MustCompile(`(?m)^(\S+)\tui\ttest ui\t`).FindStringSubmatch(list)
	if id == nil {
		t.Fatalf("token list: %q", list)
	}
	ferryCmd(t, bin, "token", "revoke", "--db", u.db, id[1])
	if code, _, _ := u.do(t, http.MethodGet, link, bearer(uiTok), nil); code != http.StatusUnauthorized {
		t.Fatalf("download with a revoked login: %d", code)
	}

	// Stop ferry up, then look at everything it and its peers printed.
	_ = u.cmd.Process.Signal(os.Interrupt)
	select {
	case <-u.done:
	case <-time.After(20 * time.Second):
		t.Fatal("ferry up did not stop")
	}
	stdout := u.out.String()
	loginLine := u.base + "/login?token=" + u.loginSecret
	if strings.Count(stdout, loginLine) != 1 {
		t.Fatalf("the login URL is not printed once on stdout: %q", stdout)
	}
	all := map[string]string{
		"ferry up stderr":               u.errb.String(),
		"ferry up stdout (but the URL)": strings.Replace(stdout, loginLine, "", 1),
	}
	for i, o := range outputs {
		all[fmt.Sprintf("ferry connect #%d", i+1)] = o
	}
	if !strings.Contains(all["ferry up stderr"], "refused") || !strings.Contains(all["ferry up stderr"], "level=DEBUG") {
		t.Fatalf("ferry up logged no refusal at debug level: %s", all["ferry up stderr"])
	}
	if !strings.Contains(all["ferry up stderr"], "push delivery failed") || !strings.Contains(all["ferry up stderr"], "push service busy") {
		t.Fatalf("ferry up did not log the failed push deliveries: %s", all["ferry up stderr"])
	}
	for where, out := range all {
		for what, s := range secrets {
			if strings.Contains(out, s) || strings.Contains(out, s[len(s)-43:]) {
				t.Errorf("%s holds the %s:\n%s", where, what, out)
			}
		}
		if strings.Contains(out, endpointPath) {
			t.Errorf("%s holds the push endpoint's path %s:\n%s", where, endpointPath, out)
		}
		if m := anySecret.FindString(out); m != "" {
			t.Errorf("%s holds a credential %s…:\n%s", where, m[:16], out)
		}
	}
}

// waitMachines waits until n machines are online.
func waitMachines(t *testing.T, c *uiConn, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := c.request(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
		ms, _ := r.Payload.(*protocol.Machines)
		online := 0
		for _, m := range ms.Machines {
			if m.Online {
				online++
			}
		}
		if online == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d machines online, want %d", online, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// machineNamed returns the online machine named name ("": not "second").
func (c *uiConn) machineNamed(t *testing.T, name string) protocol.Machine {
	t.Helper()
	r := c.request(protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}))
	ms, _ := r.Payload.(*protocol.Machines)
	for _, m := range ms.Machines {
		if m.Online && (m.Name == name || name == "" && m.Name != "second") {
			return m
		}
	}
	t.Fatalf("no online machine %q in %+v", name, ms)
	return protocol.Machine{}
}
