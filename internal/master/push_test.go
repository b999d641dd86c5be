package master_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/push/pushtest"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// pushAnswer is one /v1/push answer: its status and JSON body.
type pushAnswer struct {
	status int
	body   map[string]any
	err    protocol.Error
}

// pushCall sends a /v1/push request with a JSON body (nil: none) and the
// headers h.
func (e *env) pushCall(method, path string, h http.Header, body any) pushAnswer {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			r = strings.NewReader(s)
		} else {
			b, err := json.Marshal(body)
			if err != nil {
				e.t.Fatal(err)
			}
			r = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequestWithContext(testCtx(e.t), method, e.srv.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	a := pushAnswer{status: resp.StatusCode}
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		var wrap struct {
			Error *protocol.Error `json:"error"`
		}
		if json.Unmarshal(raw, &wrap) == nil && wrap.Error != nil {
			a.err = *wrap.Error
		} else if err := json.Unmarshal(raw, &a.body); err != nil {
			e.t.Fatalf("%s %s: HTTP %d body %s", method, path, a.status, raw)
		}
	}
	return a
}

func subscriptionBody(s *pushtest.Subscriber, label string) map[string]any {
	return map[string]any{"endpoint": s.Endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": pushtest.B64(s.P256dh), "auth": pushtest.B64(s.Auth)}, "label": label}
}

func (e *env) subscribePush(s *pushtest.Subscriber) {
	e.t.Helper()
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(e.ui), subscriptionBody(s, "test phone")); a.status != http.StatusCreated {
		e.t.Fatalf("subscribe: HTTP %d %+v", a.status, a.err)
	}
}

func (e *env) pushSubscriptions() []string {
	e.t.Helper()
	subs, err := e.st.PushSubscriptions(testCtx(e.t), time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.Endpoint
	}
	return out
}

// payload is a notification's decrypted JSON.
type payload struct {
	Kind          string `json:"kind"`
	SessionID     string `json:"session_id"`
	SessionTitle  string `json:"session_title"`
	Tool          string `json:"tool"`
	File          string `json:"file"`
	InteractionID string `json:"interaction_id"`
	Body          string `json:"body"`
	URL           string `json:"url"`
}

func decodePayload(t *testing.T, m pushtest.Message) payload {
	t.Helper()
	var p payload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		t.Fatalf("payload %q: %v", m.Payload, err)
	}
	return p
}

func permission(c *fakeClient, sessionID, turnID, id string) *protocol.Message {
	return c.emit(sessionID, protocol.TypeInteractionRequest, &protocol.InteractionRequest{
		InteractionID: id, TurnID: turnID, Kind: protocol.InteractionPermission, Title: "Edit src/secret/main.go",
		ToolName: "Edit", ToolInput: json.RawMessage(`{"file_path":"src/secret/main.go","old_string":"password=hunter2"}`),
		Options: []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow"}, {Value: protocol.Deny, Label: "Deny"}},
	})
}

func focus(ui *peer, sessionID string, focused bool) {
	ui.t.Helper()
	ui.send(protocol.New(protocol.TypeUIFocus, &protocol.UIFocus{SessionID: sessionID, Focused: focused}))
	ui.sync() // handled in order: the focus is recorded once this answers
}

func textDone(c *fakeClient, sessionID, turnID, stop string) *protocol.Message {
	return c.emit(sessionID, protocol.TypeTextDone, &protocol.TextDone{TurnID: turnID, StopReason: stop})
}

// TestPushNotifies: a permission asked, a turn finished and a turn failed
// reach a subscribed browser through the stand-in push service (which
// checks the VAPID signature and decrypts), with a payload that names the
// session, the tool and the file's base name and nothing of its content;
// none goes out while a UI is focused on the session, and a UI that
// closes is forgotten.
func TestPushNotifies(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	e := newEnv(t, master.Config{PushAllowLoopback: true, PushContact: "mailto:ops@example.com"})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	sub := srv.Subscribe()
	e.subscribePush(sub)

	req := prompt(ui, c, info.ID, "fix it")
	turnStart(c, req, "turn-1")
	permission(c, info.ID, "turn-1", "q1")
	got := srv.Wait(wait, func(m []pushtest.Message) bool { return len(m) == 1 })
	p := decodePayload(t, got[0])
	want := payload{Kind: "permission", SessionID: info.ID, SessionTitle: "t", Tool: "Edit", File: "main.go", InteractionID: "q1",
		Body: "Allow Edit on main.go?", URL: "/#/s/" + info.ID}
	if p != want {
		t.Fatalf("payload %+v\nwant %+v", p, want)
	}
	if got[0].Urgency != "high" || got[0].Sub != "mailto:ops@example.com" {
		t.Fatalf("Urgency %q sub %q", got[0].Urgency, got[0].Sub)
	}
	if bytes.Contains(got[0].Payload, []byte("hunter2")) || bytes.Contains(got[0].Payload, []byte("secret/")) {
		t.Fatalf("the payload carries tool input: %s", got[0].Payload)
	}
	// The key it was signed with is the one the browser subscribes with.
	k := e.pushCall(http.MethodGet, "/v1/push/key", bearer(e.ui), nil)
	if k.status != http.StatusOK || k.body["public_key"] != base64.RawURLEncoding.EncodeToString(got[0].Key) {
		t.Fatalf("GET /v1/push/key: HTTP %d %v, want the signing key %x", k.status, k.body, got[0].Key)
	}

	// Focused on the session: nothing. Another UI's focus elsewhere, or
	// an unfocused page, does not count.
	focus(ui, info.ID, true)
	other := e.dialUI("other UI")
	focus(other, "", true)
	permission(c, info.ID, "turn-1", "q2")
	c.waitAck(textDone(c, info.ID, "turn-1", protocol.StopEndTurn).MessageID) // decided while focused
	req = prompt(ui, c, info.ID, "again")
	turnStart(c, req, "turn-2")
	focus(ui, info.ID, false) // the page went to the background
	c.emit(info.ID, protocol.TypeAgentError, &protocol.AgentError{TurnID: "turn-2", Code: "provider_error", Message: "the provider is down"})
	textDone(c, info.ID, "turn-2", protocol.StopError)
	got = srv.Wait(wait, func(m []pushtest.Message) bool { return len(m) == 2 })
	if p := decodePayload(t, got[1]); p.Kind != "failed" || p.Body != "The turn failed: the provider is down" || got[1].Urgency != "normal" {
		t.Fatalf("second notification %+v urgency %q, want the failed turn (nothing while focused)", p, got[1].Urgency)
	}

	// Focused again, then the UI goes away: its focus is forgotten.
	focus(ui, info.ID, true)
	_ = ui.ws.CloseNow()
	req = prompt(other, c, info.ID, "third")
	turnStart(c, req, "turn-3")
	deadline := time.Now().Add(wait)
	for n := 0; len(srv.Messages()) == 2; n++ {
		// The master notices the close on its own time: end turns until
		// one is notified.
		if time.Now().After(deadline) {
			t.Fatal("no notification after the focused UI closed")
		}
		textDone(c, info.ID, "turn-3", protocol.StopEndTurn)
		time.Sleep(50 * time.Millisecond)
	}
	got = srv.Wait(wait, func(m []pushtest.Message) bool { return len(m) >= 3 })
	if p := decodePayload(t, got[2]); p.Kind != "done" || p.Body != "The agent finished its turn." {
		t.Fatalf("third notification %+v", p)
	}
	for _, m := range got {
		if decodePayload(t, m).InteractionID == "q2" {
			t.Fatal("q2 was notified while a UI was focused on its session")
		}
	}
}

// TestPushGoneAndRevoked: a subscription the push service says is gone
// (410) is deleted; revoking the token deletes its subscriptions.
func TestPushGoneAndRevoked(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	e := newEnv(t, master.Config{PushAllowLoopback: true})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	gone, kept := srv.Subscribe(), srv.Subscribe()
	e.subscribePush(gone)
	e.subscribePush(kept)
	srv.Script(gone, pushtest.Reply{Status: http.StatusGone})
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	textDone(c, info.ID, "turn-1", protocol.StopEndTurn)
	srv.Wait(wait, func(m []pushtest.Message) bool { return len(m) == 1 && m[0].Endpoint == kept.Endpoint })
	deadline := time.Now().Add(wait)
	for len(e.pushSubscriptions()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions %v, want the gone one deleted", e.pushSubscriptions())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := e.pushSubscriptions(); s[0] != kept.Endpoint {
		t.Fatalf("kept %v", s)
	}
	toks, err := e.st.ListTokens(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if tok.Kind == "ui" {
			if err := e.st.RevokeToken(testCtx(t), tok.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s := e.pushSubscriptions(); len(s) != 0 {
		t.Fatalf("subscriptions of a revoked token remain: %v", s)
	}
}

// TestPushStuckServiceNeverBlocksRelay: with the push service stuck,
// every event still reaches the UI and is acknowledged to the client.
func TestPushStuckServiceNeverBlocksRelay(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	e := newEnv(t, master.Config{PushAllowLoopback: true})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	sub := srv.Subscribe()
	e.subscribePush(sub)
	stuck := make([]pushtest.Reply, 50)
	for i := range stuck {
		stuck[i] = pushtest.Reply{Block: true}
	}
	srv.Script(sub, stuck...)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	const n = 600 // over the notifier's and the sender's queues together
	var last *protocol.Message
	for i := range n {
		last = permission(c, info.ID, "turn-1", "q"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+time.Now().Format("150405.000000000"))
	}
	evs := events(ui, n+2, 1) // prompt, turn.started, the requests
	if evs[len(evs)-1].MessageID != last.MessageID {
		t.Fatalf("last relayed %s, want %s", evs[len(evs)-1].MessageID, last.MessageID)
	}
	c.waitAck(last.MessageID)
	srv.Unblock()
}

// TestPushSubscribeRefusals: bad subscriptions get a coded error naming
// what is wrong and store nothing; non-https and non-public endpoints are
// refused before anything connects to them.
func TestPushSubscribeRefusals(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	e := newEnv(t, master.Config{}) // no loopback endpoints
	sub := srv.Subscribe()
	good := subscriptionBody(sub, "phone")
	with := func(k string, v any) map[string]any {
		b := map[string]any{}
		for kk, vv := range good {
			b[kk] = vv
		}
		b["endpoint"] = "https://push.example.com/push/x" // public: the other checks are reached
		keys := map[string]string{"p256dh": pushtest.B64(sub.P256dh), "auth": pushtest.B64(sub.Auth)}
		switch k {
		case "p256dh", "auth":
			keys[k] = v.(string)
		default:
			b[k] = v
		}
		b["keys"] = keys
		return b
	}
	offCurve := pushtest.B64(append([]byte{4}, bytes.Repeat([]byte{1}, 64)...))
	for _, tc := range []struct {
		name  string
		body  any
		code  string
		field string
	}{
		{"not JSON", "{", protocol.CodeMalformedJSON, ""},
		{"unknown field", with("extra", 1), protocol.CodeMalformedJSON, ""},
		{"wrong type", with("endpoint", 5), protocol.CodeWrongType, "endpoint"},
		{"no endpoint", with("endpoint", ""), protocol.CodeMissingField, "endpoint"},
		{"loopback endpoint", good, protocol.CodeInvalidValue, "endpoint"},
		{"plain http", with("endpoint", "http://fcm.googleapis.com/fcm/send/x"), protocol.CodeInvalidValue, "endpoint"},
		{"private address", with("endpoint", "https://10.0.0.7/push/x"), protocol.CodeInvalidValue, "endpoint"},
		{"metadata address", with("endpoint", "https://169.254.169.254/latest"), protocol.CodeInvalidValue, "endpoint"},
		{"local name", with("endpoint", "https://localhost/push/x"), protocol.CodeInvalidValue, "endpoint"},
		{"short p256dh", with("p256dh", pushtest.B64(sub.P256dh[:40])), protocol.CodeInvalidValue, "keys.p256dh"},
		{"p256dh off the curve", with("p256dh", offCurve), protocol.CodeInvalidValue, "keys.p256dh"},
		{"p256dh not base64url", with("p256dh", "a+b/c"), protocol.CodeInvalidValue, "keys.p256dh"},
		{"short auth", with("auth", pushtest.B64(sub.Auth[:10])), protocol.CodeInvalidValue, "keys.auth"},
		{"no auth", with("auth", ""), protocol.CodeMissingField, "keys"},
		{"long label", with("label", strings.Repeat("x", 65)), protocol.CodeInvalidValue, "label"},
		{"control in label", with("label", "a\nb"), protocol.CodeInvalidValue, "label"},
		{"bidi override in label", with("label", "a\u202eb"), protocol.CodeInvalidValue, "label"},
		{"zero-width space in label", with("label", "a\u200bb"), protocol.CodeInvalidValue, "label"},
		{"Hangul filler as label", with("label", "\u3164"), protocol.CodeInvalidValue, "label"},
		{"combining grapheme joiner in label", with("label", "a\u034fb"), protocol.CodeInvalidValue, "label"},
		{"too large", with("label", strings.Repeat("x", 9000)), protocol.CodeMessageTooLarge, ""},
	} {
		a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(e.ui), tc.body)
		if a.status/100 != 4 || a.err.Code != tc.code || a.err.Field != tc.field || a.err.Message == "" {
			t.Errorf("%s: HTTP %d %+v, want %s on %q", tc.name, a.status, a.err, tc.code, tc.field)
		}
	}
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", nil, good); a.status != http.StatusUnauthorized || a.err.Code != protocol.CodeUnauthorized {
		t.Errorf("no token: HTTP %d %+v", a.status, a.err)
	}
	if a := e.pushCall(http.MethodGet, "/v1/push/key", nil, nil); a.status != http.StatusUnauthorized {
		t.Errorf("key without a token: HTTP %d", a.status)
	}
	h := bearer(e.ui)
	h.Set("Content-Type", "text/plain")
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, e.srv.URL+"/v1/push/subscriptions", strings.NewReader("{}"))
	req.Header = h
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("text/plain body: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	if s := e.pushSubscriptions(); len(s) != 0 {
		t.Fatalf("refused subscriptions were stored: %v", s)
	}
	if n := len(srv.Attempts(sub)); n != 0 {
		t.Fatalf("the refused endpoint got %d requests", n)
	}
	// One token holds at most 20 subscriptions.
	for i := range 20 {
		b := with("endpoint", fmt.Sprintf("https://push.example.com/push/%d", i))
		if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(e.ui), b); a.status != http.StatusCreated {
			t.Fatalf("subscription %d: HTTP %d %+v", i, a.status, a.err)
		}
	}
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(e.ui), with("endpoint", "https://push.example.com/push/20")); a.status != http.StatusBadRequest ||
		a.err.Code != protocol.CodeInvalidValue || a.err.Field != "endpoint" || !strings.Contains(a.err.Message, "20 devices") {
		t.Fatalf("the 21st subscription: HTTP %d %+v", a.status, a.err)
	}
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(e.ui), with("endpoint", "https://push.example.com/push/3")); a.status != http.StatusCreated {
		t.Fatalf("subscribing an endpoint again at the bound: HTTP %d %+v", a.status, a.err)
	}
	// Unsubscribing what is not there is not_found.
	if a := e.pushCall(http.MethodDelete, "/v1/push/subscriptions", bearer(e.ui), map[string]string{"endpoint": "https://push.example.com/x"}); a.status != http.StatusNotFound || a.err.Code != protocol.CodeNotFound {
		t.Errorf("DELETE unknown: HTTP %d %+v", a.status, a.err)
	}
}

// TestPushSubscribeBrowser: a browser subscribes with its cookie share
// and key share from the master's origin, and unsubscribes by endpoint;
// the cookie alone or another origin opens nothing.
func TestPushSubscribeBrowser(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	e := newEnv(t, master.Config{PushAllowLoopback: true})
	b := e.login()
	sub := srv.Subscribe()
	h := func(origin, key string) http.Header {
		h := http.Header{"Cookie": {b.cookie.Name + "=" + b.cookie.Value}}
		if origin != "" {
			h.Set("Origin", origin)
		}
		if key != "" {
			h.Set(master.KeyHeader, key)
		}
		return h
	}
	for name, hh := range map[string]http.Header{"cookie alone": h(e.srv.URL, ""), "another origin": h("https://evil.example", b.key), "no origin": h("", b.key)} {
		if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", hh, subscriptionBody(sub, "x")); a.status != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d", name, a.status)
		}
	}
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", h(e.srv.URL, b.key), subscriptionBody(sub, "Pixel")); a.status != http.StatusCreated || a.body["label"] != "Pixel" {
		t.Fatalf("browser subscribe: HTTP %d %+v %v", a.status, a.err, a.body)
	}
	// A same-origin GET carries no Origin; Sec-Fetch-Site says where it is from.
	kh := h("", b.key)
	kh.Set("Sec-Fetch-Site", "same-origin")
	if a := e.pushCall(http.MethodGet, "/v1/push/key", kh, nil); a.status != http.StatusOK {
		t.Fatalf("browser key: HTTP %d %+v", a.status, a.err)
	}
	kh.Set("Sec-Fetch-Site", "cross-site")
	if a := e.pushCall(http.MethodGet, "/v1/push/key", kh, nil); a.status != http.StatusUnauthorized {
		t.Fatalf("cross-site key: HTTP %d", a.status)
	}
	// Another token cannot delete it; its owner can.
	if a := e.pushCall(http.MethodDelete, "/v1/push/subscriptions", bearer(e.ui), map[string]string{"endpoint": sub.Endpoint}); a.status != http.StatusNotFound {
		t.Fatalf("DELETE by another token: HTTP %d", a.status)
	}
	if a := e.pushCall(http.MethodDelete, "/v1/push/subscriptions", h(e.srv.URL, b.key), map[string]string{"endpoint": sub.Endpoint}); a.status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d %+v", a.status, a.err)
	}
	if s := e.pushSubscriptions(); len(s) != 0 {
		t.Fatalf("after DELETE: %v", s)
	}
}

// TestPushSubscriptionKeepsOwner (issue 31, item 1.3): another token
// subscribing a device's endpoint (with keys of its own, or the same) is
// refused with 409 invalid_value on endpoint, a message that names no
// owner or device, and nothing changes: the owner's keys and label stay,
// notifications still reach the device, and the owner can still
// unsubscribe it. The owner subscribing again replaces its keys.
func TestPushSubscriptionKeepsOwner(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	e := newEnv(t, master.Config{PushAllowLoopback: true})
	other, otherTok, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "other", 0)
	if err != nil {
		t.Fatal(err)
	}
	device, attacker := srv.Subscribe(), srv.Subscribe()
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(e.ui), subscriptionBody(device, "owner's phone")); a.status != http.StatusCreated {
		t.Fatalf("subscribe: HTTP %d %+v", a.status, a.err)
	}
	stolen := subscriptionBody(attacker, "stolen")
	stolen["endpoint"] = device.Endpoint
	for name, body := range map[string]map[string]any{"its own keys": stolen, "the device's keys": subscriptionBody(device, "stolen")} {
		a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(other), body)
		if a.status != http.StatusConflict || a.err.Code != protocol.CodeInvalidValue || a.err.Field != "endpoint" || a.err.Message == "" {
			t.Errorf("another token subscribing the endpoint with %s: HTTP %d %+v, want 409 invalid_value on endpoint", name, a.status, a.err)
		}
		if strings.Contains(a.err.Message, "owner's phone") || strings.Contains(a.err.Message, otherTok.ID) {
			t.Errorf("the refusal says too much: %q", a.err.Message)
		}
	}
	subs, err := e.st.PushSubscriptions(testCtx(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs[0].OwnerID == otherTok.ID || !bytes.Equal(subs[0].Auth, device.Auth) || subs[0].Label != "owner's phone" {
		t.Fatalf("after another token's subscription: %+v", subs)
	}
	if a := e.pushCall(http.MethodDelete, "/v1/push/subscriptions", bearer(other), map[string]string{"endpoint": device.Endpoint}); a.status != http.StatusNotFound {
		t.Fatalf("DELETE by another token: HTTP %d", a.status)
	}

	// Notifications still reach the device, encrypted to its own keys
	// (the stand-in decrypts with them).
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	turnStart(c, prompt(ui, c, info.ID, "go"), "turn-1")
	textDone(c, info.ID, "turn-1", protocol.StopEndTurn)
	srv.Wait(wait, func(m []pushtest.Message) bool { return len(m) == 1 && m[0].Endpoint == device.Endpoint })

	// The owner subscribing again replaces its keys and label; it can
	// unsubscribe.
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(e.ui), subscriptionBody(device, "renamed")); a.status != http.StatusCreated {
		t.Fatalf("the owner subscribing again: HTTP %d %+v", a.status, a.err)
	}
	if a := e.pushCall(http.MethodDelete, "/v1/push/subscriptions", bearer(e.ui), map[string]string{"endpoint": device.Endpoint}); a.status != http.StatusNoContent {
		t.Fatalf("DELETE by its owner: HTTP %d %+v", a.status, a.err)
	}
	if s := e.pushSubscriptions(); len(s) != 0 {
		t.Fatalf("after DELETE: %v", s)
	}
}

// TestPushAnswer: a notification's action answers an interaction as the
// UI does: the client gets the answer, every UI the resolution, and a
// second answer (from the push path or the UI) is refused with
// interaction_settled; a value that is not an option changes nothing.
func TestPushAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	permission(c, info.ID, "turn-1", "q1")
	events(ui, 3, 1)
	ans := func(h http.Header, sid, id, value string) pushAnswer {
		return e.pushCall(http.MethodPost, "/v1/push/answer", h, map[string]string{"session_id": sid, "interaction_id": id, "value": value})
	}
	if a := ans(bearer(e.ui), info.ID, "q1", "maybe"); a.status != http.StatusBadRequest || a.err.Code != protocol.CodeInvalidValue || a.err.Field != "value" {
		t.Fatalf("a value that is no option: HTTP %d %+v", a.status, a.err)
	}
	if a := ans(nil, info.ID, "q1", "allow"); a.status != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d", a.status)
	}
	if a := ans(bearer(e.ui), "no-such-session", "q1", "allow"); a.status != http.StatusNotFound || a.err.Field != "session_id" {
		t.Fatalf("unknown session: HTTP %d %+v", a.status, a.err)
	}
	if a := ans(bearer(e.ui), info.ID, "q9", "allow"); a.status != http.StatusNotFound || a.err.Field != "interaction_id" {
		t.Fatalf("unknown interaction: HTTP %d %+v", a.status, a.err)
	}
	b := e.login()
	bh := http.Header{"Cookie": {b.cookie.Name + "=" + b.cookie.Value}, "Origin": {e.srv.URL}, master.KeyHeader: {b.key}}
	if a := ans(bh, info.ID, "q1", "allow"); a.status != http.StatusOK || a.body["value"] != protocol.AllowOnce {
		t.Fatalf("answer: HTTP %d %+v %v", a.status, a.err, a.body)
	}
	got := c.next(protocol.TypeInteractionResponse)
	if r := got.Payload.(*protocol.InteractionResponse); r.InteractionID != "q1" || r.SelectedValue.Values[0] != protocol.AllowOnce || got.SessionID != info.ID {
		t.Fatalf("the client got %+v", r)
	}
	if r := resolved(t, ui, "q1", "answered"); r.SelectedValue.Values[0] != protocol.AllowOnce {
		t.Fatalf("resolved %+v", r)
	}
	if a := ans(bearer(e.ui), info.ID, "q1", "deny"); a.status != http.StatusConflict || a.err.Code != protocol.CodeInteractionSettled || a.err.Field != "interaction_id" {
		t.Fatalf("second answer: HTTP %d %+v", a.status, a.err)
	}
	late := answer(ui, info.ID, "q1", protocol.Deny)
	ui.expectError(late.MessageID, protocol.CodeInteractionSettled, "payload.interaction_id")
	clientSync(ui, c, info.ID) // nothing else was forwarded

	// A notification's answer racing the UI's: exactly one wins.
	for i := range 5 {
		id := fmt.Sprintf("race-%d", i)
		permission(c, info.ID, "turn-1", id)
		ui.next(protocol.TypeInteractionRequest)
		httpDone := make(chan pushAnswer, 1)
		go func() { httpDone <- ans(bearer(e.ui), info.ID, id, "deny") }()
		uiMsg := answer(ui, info.ID, id, protocol.AllowOnce)
		h := <-httpDone
		got := c.next(protocol.TypeInteractionResponse)
		// The resolution and (when the UI lost) its refusal, in either order.
		var r *protocol.InteractionResolved
		var refused *protocol.Error
		for r == nil || h.status == http.StatusOK && refused == nil {
			m := ui.next(protocol.TypeInteractionResolved, protocol.TypeError)
			switch p := m.Payload.(type) {
			case *protocol.InteractionResolved:
				if p.InteractionID != id || p.Outcome != "answered" {
					t.Fatalf("%s: resolved %+v", id, p)
				}
				r = p
			case *protocol.Error:
				if m.ParentID != uiMsg.MessageID {
					t.Fatalf("%s: error %+v about %s", id, p, m.ParentID)
				}
				refused = p
			}
		}
		switch {
		case h.status == http.StatusOK:
			if refused.Code != protocol.CodeInteractionSettled || refused.Field != "payload.interaction_id" {
				t.Fatalf("%s: the UI's late answer got %+v", id, refused)
			}
			if r.SelectedValue.Values[0] != protocol.Deny || got.Payload.(*protocol.InteractionResponse).SelectedValue.Values[0] != protocol.Deny {
				t.Fatalf("%s: the push answer won but %+v was resolved", id, r)
			}
		case h.status == http.StatusConflict && h.err.Code == protocol.CodeInteractionSettled:
			if r.SelectedValue.Values[0] != protocol.AllowOnce || got.MessageID != uiMsg.MessageID {
				t.Fatalf("%s: the UI's answer won but %+v was resolved", id, r)
			}
		default:
			t.Fatalf("%s: push answer HTTP %d %+v", id, h.status, h.err)
		}
		clientSync(ui, c, info.ID) // the loser was not forwarded
	}
}

// TestPushFocusAcrossNodes: two master nodes on one database and broker.
// A UI on the node that does not store the session's events still holds
// its notifications back while focused, and is forgotten when it closes;
// a focus from a node that went silent stops counting after three
// refresh intervals.
func TestPushFocusAcrossNodes(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	br := broker.NewMemory()
	const refresh = time.Second
	a := newEnv(t, master.Config{Broker: br, PushAllowLoopback: true, FocusRefresh: refresh})
	stB := newStore(t, a.path)
	t.Cleanup(func() { _ = stB.Close() })
	urlB := a.secondNode(master.Config{Store: stB, Broker: br, PushAllowLoopback: true, FocusRefresh: refresh})
	uiA := a.dialUI("UI on A")
	c := a.connectClient(testCaps("m1"), uiA)
	info, _ := startSession(uiA, c)
	a.subscribePush(srv.Subscribe())
	uiB, _, _, err := dial(t, urlB, bearer(a.ui))
	if err != nil {
		t.Fatal(err)
	}
	uiB.name, uiB.skip, uiB.skipStatus = "UI on B", []string{protocol.TypeMachineStatus}, true
	focus(uiB, info.ID, true)

	turn := 0
	endTurn := func() {
		turn++
		id := fmt.Sprintf("turn-%d", turn)
		turnStart(c, prompt(uiA, c, info.ID, id), id)
		c.waitAck(textDone(c, info.ID, id, protocol.StopEndTurn).MessageID)
	}
	quiet := func(what string, want int) {
		t.Helper()
		time.Sleep(200 * time.Millisecond) // room for a wrong delivery
		if n := len(srv.Messages()); n != want {
			t.Fatalf("%s: %d notifications, want %d", what, n, want)
		}
	}
	endTurns := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(wait)
		for len(srv.Messages()) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no notification", what)
			}
			endTurn()
			time.Sleep(50 * time.Millisecond)
		}
	}
	endTurn()
	quiet("focused on node B", 0)
	_ = uiB.ws.CloseNow()
	endTurns("after the UI on B closed", 1)

	// A node that went silent: its last focus note holds for 3×refresh.
	note, _ := json.Marshal(map[string]any{"node": "dead-node", "conn": "c1", "session": info.ID, "focused": true})
	if err := br.Publish(testCtx(t), "push.focus", note); err != nil {
		t.Fatal(err)
	}
	n := len(srv.Messages())
	endTurn()
	quiet("a fresh note from another node", n)
	time.Sleep(3*refresh + 200*time.Millisecond)
	endTurns("after the note went stale", n+1)
}

// TestFocusRefusals: ui.focus on a session that does not exist, or on a
// machine the UI's token may not see, is answered not_found and changes
// nothing: a session hidden from a UI cannot have its notifications held
// back by it, nor are they sent to that token's devices.
func TestFocusRefusals(t *testing.T) {
	t.Parallel()
	srv := pushtest.New(t)
	e := newEnv(t, master.Config{PushAllowLoopback: true})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	e.subscribePush(srv.Subscribe())
	m := ui.send(protocol.New(protocol.TypeUIFocus, &protocol.UIFocus{SessionID: "no-such-session", Focused: true}))
	ui.expectError(m.MessageID, protocol.CodeNotFound, "payload.session_id")

	secret, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "scoped", time.Hour, auth.WithMachines("m2"))
	if err != nil {
		t.Fatal(err)
	}
	scoped, _, _, err := dial(t, e.wsURL("/v1/ui"), bearer(secret))
	if err != nil {
		t.Fatal(err)
	}
	scoped.name, scoped.skip, scoped.skipStatus = "scoped UI", []string{protocol.TypeMachineStatus}, true
	m = scoped.send(protocol.New(protocol.TypeUIFocus, &protocol.UIFocus{SessionID: info.ID, Focused: true}))
	scoped.expectError(m.MessageID, protocol.CodeNotFound, "payload.session_id")

	// The scoped token's own device is not told of m1's sessions.
	hidden := srv.Subscribe()
	if a := e.pushCall(http.MethodPost, "/v1/push/subscriptions", bearer(secret), subscriptionBody(hidden, "scoped")); a.status != http.StatusCreated {
		t.Fatalf("scoped subscribe: HTTP %d %+v", a.status, a.err)
	}

	turnStart(c, prompt(ui, c, info.ID, "go"), "turn-1")
	textDone(c, info.ID, "turn-1", protocol.StopEndTurn)
	srv.Wait(wait, func(m []pushtest.Message) bool { return len(m) == 1 })
	time.Sleep(200 * time.Millisecond) // room for a wrong delivery
	if n := len(srv.Attempts(hidden)); n != 0 {
		t.Fatalf("a token scoped to m2 was notified of m1's session (%d requests)", n)
	}
}

// TestPushKeyKept: the VAPID key is made once and kept in the store, so a
// restarted master (or another node) signs with the key browsers
// subscribed with.
func TestPushKeyKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	first := e.pushCall(http.MethodGet, "/v1/push/key", bearer(e.ui), nil)
	key, _ := base64.RawURLEncoding.DecodeString(fmt.Sprint(first.body["public_key"]))
	if first.status != http.StatusOK || len(key) != 65 || key[0] != 4 {
		t.Fatalf("GET /v1/push/key: HTTP %d %v", first.status, first.body)
	}
	e.restart()
	if again := e.pushCall(http.MethodGet, "/v1/push/key", bearer(e.ui), nil); again.body["public_key"] != first.body["public_key"] {
		t.Fatalf("the key changed across a restart: %v, then %v", first.body, again.body)
	}
}
