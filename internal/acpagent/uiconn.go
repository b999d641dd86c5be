package acpagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/protocol"
)

// errUIClosed is the error of a request whose UI connection went away.
var errUIClosed = errors.New("the connection to the ferry master closed")

// errUnauthorized is a dial the master refused the token of: retrying
// cannot help.
var errUnauthorized = errors.New("the master refused the token")

// How the face gets its connection to the master back: a dropped
// connection (a Wi-Fi change, a master restarted) is dialled again with a
// backoff for up to reconnectFor; the sessions it follows then subscribe
// again from the last event they handled, so a turn goes on and no event
// is lost or shown twice. Variables for tests.
var (
	reconnectMin = 250 * time.Millisecond
	reconnectMax = 5 * time.Second
	reconnectFor = 2 * time.Minute
)

// uiConn is the face's WebSocket to a ferry master, as a UI: answers go
// to whoever waits on the request's message_id, session events to the
// session that follows them.
type uiConn struct {
	t    Target
	base string       // http(s) base URL of the master
	http *http.Client // the one that dials it
	log  *slog.Logger

	mu      sync.Mutex
	conn    *websocket.Conn // nil while the connection is down
	lost    chan struct{}   // closed when conn goes down
	back    chan struct{}   // closed when a dropped connection is up again
	waiters map[string]chan *protocol.Message
	subs    map[string]*session
	closing bool // close was called: no reconnecting
	closed  bool // gone for good

	stop   context.Context // done once close was called
	cancel context.CancelFunc
	done   chan struct{} // closed once gone for good
}

// dialUI opens the master's /v1/ui with the UI token.
func dialUI(ctx context.Context, t Target, log *slog.Logger) (*uiConn, error) {
	conn, err := dialConn(ctx, t)
	if err != nil {
		return nil, err
	}
	hc := t.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	u := &uiConn{t: t, base: strings.TrimRight(t.URL, "/"), http: hc, log: log, conn: conn, lost: make(chan struct{}),
		waiters: map[string]chan *protocol.Message{}, subs: map[string]*session{},
		done: make(chan struct{})}
	u.stop, u.cancel = context.WithCancel(context.Background())
	go u.run(conn) //nolint:gosec // the connection outlives the request that dialled it; close ends it
	return u, nil
}

func dialConn(ctx context.Context, t Target) (*websocket.Conn, error) {
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
			return nil, fmt.Errorf("%w at %s: use a ui token from 'ferry token create --kind ui'", errUnauthorized, base)
		}
		return nil, fmt.Errorf("dial the master at %s: %w", base, err)
	}
	conn.SetReadLimit(protocol.MaxMessageBytes)
	return conn, nil
}

// run reads conn, and each connection dialled again after it, until the
// face closes or the master stays out of reach.
func (u *uiConn) run(conn *websocket.Conn) {
	defer func() {
		u.mu.Lock()
		u.closed = true
		subs := u.followed()
		u.mu.Unlock()
		close(u.done)
		for _, s := range subs {
			s.uiGone()
		}
	}()
	for {
		u.read(conn)
		u.mu.Lock()
		u.conn = nil
		close(u.lost)
		u.back = make(chan struct{})
		closing := u.closing
		u.mu.Unlock()
		if closing {
			return
		}
		u.log.Warn("acp: the connection to the ferry master dropped; dialling it again", "master", u.base)
		if conn = u.redial(); conn == nil {
			return
		}
		u.mu.Lock()
		if u.closing {
			u.mu.Unlock()
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return
		}
		u.conn, u.lost = conn, make(chan struct{})
		close(u.back)
		subs := u.followed()
		u.mu.Unlock()
		u.log.Info("acp: connected to the ferry master again", "master", u.base, "sessions", len(subs))
		for _, s := range subs {
			go s.resume() //nolint:gosec // bounded by the session's context
		}
	}
}

// followed is the sessions followed. u.mu is held.
func (u *uiConn) followed() []*session {
	subs := make([]*session, 0, len(u.subs))
	for _, s := range u.subs {
		subs = append(subs, s)
	}
	return subs
}

// redial dials the master again with a backoff; nil when it stays out of
// reach for reconnectFor, refuses the token, or the face closes.
func (u *uiConn) redial() *websocket.Conn {
	deadline := time.Now().Add(reconnectFor)
	wait := reconnectMin
	for {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-u.stop.Done():
			timer.Stop()
			return nil
		}
		ctx, cancel := context.WithDeadline(u.stop, deadline)
		conn, err := dialConn(ctx, u.t)
		cancel()
		switch {
		case err == nil:
			return conn
		case errors.Is(err, errUnauthorized):
			u.log.Error("acp: the master refused the token on reconnecting", "master", u.base)
			return nil
		case time.Now().After(deadline):
			u.log.Error("acp: the ferry master stayed out of reach", "master", u.base, "for", reconnectFor, "err", err)
			return nil
		}
		wait = min(2*wait, reconnectMax)
	}
}

// read routes conn's messages until it fails.
func (u *uiConn) read(conn *websocket.Conn) {
	for {
		_, data, err := conn.Read(context.Background())
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

// close closes the connection for good and waits for its reader.
func (u *uiConn) close() {
	u.mu.Lock()
	u.closing = true
	u.cancel()
	conn := u.conn
	u.mu.Unlock()
	if conn != nil {
		_ = conn.Close(websocket.StatusNormalClosure, "")
	}
	<-u.done
}

// current is the connection up now and the channel closed when it goes
// down; errUIClosed while it is down.
func (u *uiConn) current() (*websocket.Conn, <-chan struct{}, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conn == nil {
		if u.closed || u.closing {
			return nil, nil, errUIClosed
		}
		return nil, nil, fmt.Errorf("%w; dialling it again", errUIClosed)
	}
	return u.conn, u.lost, nil
}

// send writes m; while a dropped connection is dialled again it waits
// for it (bounded by ctx and by reconnectFor), so that what the editor
// asks meanwhile goes out once the master is back instead of failing.
func (u *uiConn) send(ctx context.Context, m *protocol.Message) error {
	data, err := protocol.Encode(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if err := u.waitUp(ctx); err != nil {
		return err
	}
	conn, _, err := u.current()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, data); err != nil {
		return fmt.Errorf("%w: %w", errUIClosed, err)
	}
	return nil
}

// request sends m and returns the master's answer to it (the message whose
// parent_id is m's id), an *protocol.Error when it answered with one. A
// connection that drops before the answer fails the request; one that is
// down when it is made is waited for, as in send.
func (u *uiConn) request(ctx context.Context, m *protocol.Message, timeout time.Duration) (*protocol.Message, error) {
	if err := u.waitUp(ctx); err != nil {
		return nil, err
	}
	_, lost, err := u.current()
	if err != nil {
		return nil, err
	}
	ch := make(chan *protocol.Message, 1)
	u.mu.Lock()
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
	case <-lost:
		return nil, errUIClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("the master did not answer %s within %s", m.Type, timeout)
	}
}

// waitUp waits until the connection is up: at once when it is, else
// until a dropped one is dialled again; errUIClosed when it is gone for
// good.
func (u *uiConn) waitUp(ctx context.Context) error {
	u.mu.Lock()
	up, back := u.conn != nil, u.back
	u.mu.Unlock()
	if up {
		return nil
	}
	if back == nil {
		return errUIClosed
	}
	select {
	case <-back:
		return nil
	case <-u.done:
		return errUIClosed
	case <-ctx.Done():
		return ctx.Err()
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
