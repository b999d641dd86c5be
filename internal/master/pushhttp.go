package master

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/connlimit"
	"github.com/ferry-dev/ferry/internal/push"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// maxPushBody bounds the JSON body of the /v1/push endpoints.
const maxPushBody = 8 << 10

// maxPushPerToken bounds the subscriptions of one UI token, so that one
// sign-in cannot grow the store, or the requests every event makes,
// without bound.
const maxPushPerToken = 20

// maxPushLabel bounds a device label, in characters.
const maxPushLabel = 64

// pushAnswerWait bounds how long POST /v1/push/answer waits for the
// session's client to be online (besides Config.OfflineGrace).
const pushAnswerWait = 30 * time.Second

// pushToken authenticates a /v1/push request like an upload (a bearer UI
// token, or a browser's cookie share with its key share in KeyHeader),
// answering it itself when it does not authenticate. A browser's request
// must come from the master's origin: its Origin header, or, for a GET
// that carries none, Sec-Fetch-Site same-origin.
func (m *Master) pushToken(w http.ResponseWriter, r *http.Request) (store.Token, bool) {
	secret, ok := bearer(r)
	if !ok {
		secret, ok = m.pushBrowserSecret(r)
	}
	if !ok {
		m.log.Info("refused push request", "route", r.Pattern, "remote", m.remote(r))
		m.pushError(w, errPushUnauthorized)
		return store.Token{}, false
	}
	tok, err := auth.Verify(r.Context(), m.st, secret, store.TokenUI)
	switch {
	case errors.Is(err, auth.ErrUnauthorized):
		m.log.Info("refused push request", "route", r.Pattern, "remote", m.remote(r))
		m.pushError(w, errPushUnauthorized)
		return tok, false
	case err != nil:
		m.pushError(w, m.wireError(err, "verify token"))
		return tok, false
	}
	connlimit.MarkAuthenticated(r.Context())
	return tok, true
}

func (m *Master) pushBrowserSecret(r *http.Request) (string, bool) {
	if r.Header.Get("Origin") == "" && r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		ck, _, ok := m.sessionCookie(r)
		key := r.Header.Get(KeyHeader)
		if !ok || key == "" {
			return "", false
		}
		return joinUISecret(ck, key)
	}
	return m.uploadSecret(r)
}

var errPushUnauthorized = &protocol.Error{Code: protocol.CodeUnauthorized, Message: "missing, invalid or expired token"}

// pushError answers a coded error, as {"error": {...}} like an upload's,
// with the HTTP status its code means.
func (m *Master) pushError(w http.ResponseWriter, e *protocol.Error) {
	m.pushErrorStatus(w, 0, e)
}

// pushErrorStatus is pushError with the status given (0: the code's).
func (m *Master) pushErrorStatus(w http.ResponseWriter, status int, e *protocol.Error) {
	if status == 0 {
		status = pushStatus(e.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *protocol.Error `json:"error"`
	}{e})
}

// pushStatus is the HTTP status of a /v1/push error code.
func pushStatus(code string) int {
	status := http.StatusBadRequest
	switch code {
	case protocol.CodeUnauthorized:
		status = http.StatusUnauthorized
	case protocol.CodeNotFound:
		status = http.StatusNotFound
	case protocol.CodeInteractionSettled:
		status = http.StatusConflict
	case protocol.CodeClientOffline:
		status = http.StatusServiceUnavailable
	case protocol.CodeMessageTooLarge:
		status = http.StatusRequestEntityTooLarge
	case protocol.CodeInternal:
		status = http.StatusInternalServerError
	}
	return status
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readPushBody decodes a bounded JSON body strictly into v.
func readPushBody(r *http.Request, v any) *protocol.Error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "Content-Type", Message: "send application/json"}
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxPushBody+1))
	if err != nil {
		return &protocol.Error{Code: protocol.CodeMalformedJSON, Message: "the body could not be read"}
	}
	if len(b) > maxPushBody {
		return &protocol.Error{Code: protocol.CodeMessageTooLarge, Message: fmt.Sprintf("the body is over %d bytes", maxPushBody)}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return &protocol.Error{Code: protocol.CodeWrongType, Field: ute.Field, Message: "wrong JSON type"}
		}
		return &protocol.Error{Code: protocol.CodeMalformedJSON, Message: "the body is not the JSON object expected: " + err.Error()}
	}
	return nil
}

// servePushKey handles GET /v1/push/key: the VAPID public key, the
// applicationServerKey of pushManager.subscribe.
func (m *Master) servePushKey(w http.ResponseWriter, r *http.Request) {
	if _, ok := m.pushToken(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"public_key": base64.RawURLEncoding.EncodeToString(m.notify.sender.PublicKey())})
}

// pushSubscriptionBody is PushSubscription.toJSON() and a device label.
type pushSubscriptionBody struct {
	Endpoint       string   `json:"endpoint"`
	ExpirationTime *float64 `json:"expirationTime"`
	Keys           struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
	Label string `json:"label"`
}

// decodeKey reads a base64url key with or without padding.
func decodeKey(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	return b, err == nil
}

// servePushSubscribe handles POST /v1/push/subscriptions: the browser's
// subscription is checked (endpoint reachable and public, keys of the
// right size and on the curve, label a name protocol.CheckName accepts)
// and stored for the token. An endpoint another token owns is refused
// (409): a subscription keeps its owner.
func (m *Master) servePushSubscribe(w http.ResponseWriter, r *http.Request) {
	tok, ok := m.pushToken(w, r)
	if !ok {
		return
	}
	var b pushSubscriptionBody
	if e := readPushBody(r, &b); e != nil {
		m.pushError(w, e)
		return
	}
	bad := func(field, msg string) {
		m.pushError(w, &protocol.Error{Code: protocol.CodeInvalidValue, Field: field, Message: msg})
	}
	switch {
	case b.Endpoint == "":
		m.pushError(w, &protocol.Error{Code: protocol.CodeMissingField, Field: "endpoint", Message: "the subscription's endpoint is required"})
		return
	case b.Keys.P256dh == "" || b.Keys.Auth == "":
		m.pushError(w, &protocol.Error{Code: protocol.CodeMissingField, Field: "keys", Message: "keys.p256dh and keys.auth are required"})
		return
	}
	if err := push.CheckEndpoint(b.Endpoint, m.cfg.PushAllowLoopback); err != nil {
		bad("endpoint", strings.TrimPrefix(err.Error(), push.ErrEndpoint.Error()+": "))
		return
	}
	p256, ok1 := decodeKey(b.Keys.P256dh)
	authKey, ok2 := decodeKey(b.Keys.Auth)
	if !ok1 {
		bad("keys.p256dh", "not base64url")
		return
	}
	if !ok2 {
		bad("keys.auth", "not base64url")
		return
	}
	if push.CheckKeys(p256, make([]byte, 16)) != nil {
		bad("keys.p256dh", "want an uncompressed P-256 point (65 bytes)")
		return
	}
	if len(authKey) != 16 {
		bad("keys.auth", "want 16 bytes")
		return
	}
	label := strings.TrimSpace(b.Label)
	if label == "" {
		label = "browser"
	}
	if e := protocol.CheckName("label", label); e != nil {
		m.pushError(w, e)
		return
	}
	if utf8.RuneCountInString(label) > maxPushLabel {
		bad("label", fmt.Sprintf("a label is 1 to %d characters", maxPushLabel))
		return
	}
	err := m.st.PutPushSubscription(r.Context(), store.PushSubscription{Endpoint: b.Endpoint, P256dh: p256, Auth: authKey,
		OwnerID: tok.ID, Label: label, CreatedAt: time.Now().UTC()}, maxPushPerToken)
	switch {
	case errors.Is(err, store.ErrQuota):
		bad("endpoint", fmt.Sprintf("this sign-in already has %d devices subscribed; turn notifications off on one first", maxPushPerToken))
		return
	case errors.Is(err, store.ErrExists):
		// Another sign-in's device: its owner keeps it (keys, label, the
		// right to unsubscribe). Nothing about that owner is said.
		m.pushErrorStatus(w, http.StatusConflict, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "endpoint",
			Message: "another sign-in has subscribed this endpoint; subscribe again for a new one"})
		return
	}
	if err != nil {
		m.pushError(w, m.wireError(err, "push subscription"))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"endpoint": b.Endpoint, "label": label})
}

// servePushUnsubscribe handles DELETE /v1/push/subscriptions: the
// token's subscription of {endpoint} is deleted.
func (m *Master) servePushUnsubscribe(w http.ResponseWriter, r *http.Request) {
	tok, ok := m.pushToken(w, r)
	if !ok {
		return
	}
	var b struct {
		Endpoint string `json:"endpoint"`
	}
	if e := readPushBody(r, &b); e != nil {
		m.pushError(w, e)
		return
	}
	if b.Endpoint == "" {
		m.pushError(w, &protocol.Error{Code: protocol.CodeMissingField, Field: "endpoint", Message: "name the subscription's endpoint"})
		return
	}
	if err := m.st.DeletePushSubscription(r.Context(), b.Endpoint, tok.ID); err != nil {
		m.pushError(w, m.wireError(err, "push subscription"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pushAnswerBody is POST /v1/push/answer's body.
type pushAnswerBody struct {
	SessionID     string `json:"session_id"`
	InteractionID string `json:"interaction_id"`
	// Value is an option's value; "allow" means allow_once.
	Value string `json:"value"`
}

// servePushAnswer handles POST /v1/push/answer: a notification's action
// answers an interaction exactly as the UI's control.interaction.response
// does (forwardTo), so the first answer wins and a later one gets
// interaction_settled. The value must be one of the interaction's
// options.
func (m *Master) servePushAnswer(w http.ResponseWriter, r *http.Request) {
	tok, ok := m.pushToken(w, r)
	if !ok {
		return
	}
	var b pushAnswerBody
	if e := readPushBody(r, &b); e != nil {
		m.pushError(w, e)
		return
	}
	for _, f := range [][2]string{{"session_id", b.SessionID}, {"interaction_id", b.InteractionID}, {"value", b.Value}} {
		if f[1] == "" {
			m.pushError(w, &protocol.Error{Code: protocol.CodeMissingField, Field: f[0], Message: f[0] + " is required"})
			return
		}
		if len(f[1]) > 256 {
			m.pushError(w, &protocol.Error{Code: protocol.CodeInvalidValue, Field: f[0], Message: f[0] + " is over 256 bytes"})
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), pushAnswerWait)
	defer cancel()
	s, err := m.session(ctx, b.SessionID)
	if err == nil && len(tok.Machines) > 0 && !slices.Contains(tok.Machines, s.machineID) {
		err = store.ErrNotFound // a machine the token may not see is one that does not exist
	}
	if err != nil {
		m.pushError(w, sessionError(m.wireError(err, "session")))
		return
	}
	in, err := m.st.Interaction(ctx, s.id, b.InteractionID)
	if err != nil {
		e := m.wireError(err, "interaction")
		if e.Code == protocol.CodeNotFound {
			e = &protocol.Error{Code: protocol.CodeNotFound, Field: "interaction_id", Message: "no such interaction"}
		}
		m.pushError(w, e)
		return
	}
	if in.Outcome != "" {
		// Settled already: say so even while its client is offline (the
		// settle in forwardTo refuses it the same way when it races).
		m.pushError(w, &protocol.Error{Code: protocol.CodeInteractionSettled, Field: "interaction_id",
			Message: "the interaction was already settled; the first answer won"})
		return
	}
	value := b.Value
	if req, err := protocol.Decode(in.Request); err == nil {
		if ir, ok := req.Payload.(*protocol.InteractionRequest); ok {
			if value == "allow" && ir.Kind == protocol.InteractionPermission {
				value = protocol.AllowOnce
			}
			if ir.Kind == protocol.InteractionTextInput ||
				!slices.ContainsFunc(ir.Options, func(o protocol.Option) bool { return o.Value == value }) {
				m.pushError(w, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "value", Message: "not one of the interaction's options"})
				return
			}
		}
	}
	msg := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: b.InteractionID, SelectedValue: protocol.Single(value)})
	msg.SessionID = s.id
	res := make(chan *protocol.Error, 1)
	m.forwardTo(ctx, s, msg, "", func(e *protocol.Error) { res <- e }, func() { res <- nil })
	select {
	case e := <-res:
		if e != nil {
			if e.Field == "payload.interaction_id" {
				e = &protocol.Error{Code: e.Code, Field: "interaction_id", Message: e.Message}
			}
			m.pushError(w, e)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"interaction_id": b.InteractionID, "value": value})
	case <-ctx.Done():
		m.pushError(w, errClientOffline)
	}
}
