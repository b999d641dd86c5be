package acpagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/protocol"
)

// errUIClosed is the error of a request whose UI connection went away.
var errUIClosed = errors.New("the connection to the ferry master closed")

// uiConn is the face's WebSocket to a ferry master, as a UI: answers go
// to whoever waits on the request's message_id, session events to the
// session that follows them.
type uiConn struct {
	conn *websocket.Conn
	base string // http(s) base URL of the master
	http *http.Client

	mu      sync.Mutex
	waiters map[string]chan *protocol.Message
	subs    map[string]*session
	closed  bool

	done chan struct{}
}

// dialUI opens base's /v1/ui with the UI token.
func dialUI(ctx context.Context, t Target) (*uiConn, error) {
	hc := t.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	base := strings.TrimRight(t.URL, "/")
	ws := "ws" + strings.TrimPrefix(base, "http") + "/v1/ui"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{
		HTTPClient: hc,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + t.Token}},
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, fmt.Errorf("the master at %s refused the token: use a ui token from 'ferry token create --kind ui'", base)
		}
		return nil, fmt.Errorf("dial the master at %s: %w", base, err)
	}
	conn.SetReadLimit(protocol.MaxMessageBytes)
	u := &uiConn{conn: conn, base: base, http: hc, waiters: map[string]chan *protocol.Message{},
		subs: map[string]*session{}, done: make(chan struct{})}
	go u.read() //nolint:gosec // the connection outlives the request that dialled it; close ends it
	return u, nil
}

func (u *uiConn) read() {
	defer func() {
		u.mu.Lock()
		u.closed = true
		subs := make([]*session, 0, len(u.subs))
		for _, s := range u.subs {
			subs = append(subs, s)
		}
		u.mu.Unlock()
		close(u.done)
		for _, s := range subs {
			s.uiGone()
		}
	}()
	for {
		_, data, err := u.conn.Read(context.Background())
		if err != nil {
			return
		}
		m, err := protocol.DecodeRelayed(data)
		if err != nil {
			continue // a newer master's message: nothing to do with it
		}
		u.mu.Lock()
		var w chan *protocol.Message
		if m.ParentID != "" {
			w = u.waiters[m.ParentID]
			delete(u.waiters, m.ParentID)
		}
		s := u.subs[m.SessionID]
		u.mu.Unlock()
		if w != nil {
			w <- m
		}
		// A stored event answering a request (agent.mode.changed answers
		// control.mode.switch) is also one of the session's events.
		if s != nil && (w == nil || m.Seq > 0) {
			s.enqueue(m)
		}
	}
}

// close closes the connection and waits for its reader.
func (u *uiConn) close() {
	_ = u.conn.Close(websocket.StatusNormalClosure, "")
	<-u.done
}

// send writes m.
func (u *uiConn) send(ctx context.Context, m *protocol.Message) error {
	data, err := protocol.Encode(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := u.conn.Write(ctx, websocket.MessageText, data); err != nil {
		return fmt.Errorf("%w: %w", errUIClosed, err)
	}
	return nil
}

// request sends m and returns the master's answer to it (the message whose
// parent_id is m's id), an *protocol.Error when it answered with one.
func (u *uiConn) request(ctx context.Context, m *protocol.Message, timeout time.Duration) (*protocol.Message, error) {
	ch := make(chan *protocol.Message, 1)
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, errUIClosed
	}
	u.waiters[m.MessageID] = ch
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		delete(u.waiters, m.MessageID)
		u.mu.Unlock()
	}()
	if err := u.send(ctx, m); err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if e, ok := r.Payload.(*protocol.Error); ok {
			return nil, e
		}
		return r, nil
	case <-u.done:
		return nil, errUIClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("the master did not answer %s within %s", m.Type, timeout)
	}
}

// follow routes the events of sessionID to s.
func (u *uiConn) follow(sessionID string, s *session) {
	u.mu.Lock()
	u.subs[sessionID] = s
	u.mu.Unlock()
}

// unfollow stops routing sessionID's events.
func (u *uiConn) unfollow(sessionID string) {
	u.mu.Lock()
	delete(u.subs, sessionID)
	u.mu.Unlock()
}
