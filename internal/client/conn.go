package client

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/protocol"
)

// directQueue bounds the answers (errors, candidates) waiting for the
// writer of one connection.
const directQueue = 64

// outboxBatch is how many outbox entries the writer reads at a time.
const outboxBatch = 64

// conn is one live connection to the master.
type conn struct {
	ws     *websocket.Conn
	direct chan outFrame
	done   chan struct{}

	// reads are the downloads this connection streams, by request_id:
	// their acks and cancels arrive here, and they end with it.
	mu    sync.Mutex
	reads map[string]*read
	// refused is the permanent refusal the master closed with, if any:
	// the reader sees the close frame, but the writer or the pinger may
	// be the first to fail.
	refused error
}

func (cn *conn) setRefusal(err error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.refused = err
}

func (cn *conn) refusedWith() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.refused
}

// outFrame is a frame for the writer: a JSON message, or a download's
// binary data frame.
type outFrame struct {
	data   []byte
	binary bool
}

// send queues a text frame for the writer; it waits while the queue is
// full and gives up when the connection ends.
func (cn *conn) send(data []byte) bool {
	return cn.sendFrame(outFrame{data: data})
}

func (cn *conn) sendFrame(f outFrame) bool {
	select {
	case cn.direct <- f:
		return true
	case <-cn.done:
		return false
	}
}

// Run connects to the master and serves it, reconnecting after every
// transient failure (dial errors, 5xx, a master shutting down, a dropped
// connection) with exponential backoff and jitter, until ctx is done (it
// then returns nil) or Close is called. A refusal that retrying cannot fix
// ends it: ErrUnauthorized when the master refuses the token,
// ErrMachineTaken when it refuses the machine. It returns ErrClosed when
// called after Close. Run must not be called twice at the same time.
func (c *Client) Run(ctx context.Context) error {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ErrClosed
	case c.running:
		c.mu.Unlock()
		return errors.New("client: Run is already running")
	}
	c.running = true
	c.runWG.Add(1)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
		c.runWG.Done()
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopAfter := context.AfterFunc(c.stop, cancel)
	defer stopAfter()

	retry := reconnectPolicy{lo: c.cfg.MinBackoff, hi: c.cfg.MaxBackoff, stable: c.cfg.StableAfter}
	for {
		up, err := c.connectOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrMachineTaken) {
			return err
		}
		if restarting(err) {
			retry.restarted()
		}
		delay := retry.next(up)
		c.log.Info("disconnected from the master; reconnecting", "err", err, "in", delay.Round(time.Millisecond))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// reconnectPolicy chooses the delay before each reconnect attempt.
type reconnectPolicy struct {
	lo, hi, stable time.Duration
	attempt        int
}

// next is the delay after a connection that stayed registered for up (0:
// it never got that far). Only a connection that lasted stable starts the
// backoff over: one the master accepts and drops at once counts as a
// failed attempt like a refused dial.
func (p *reconnectPolicy) next(up time.Duration) time.Duration {
	if up >= p.stable {
		p.attempt = 0
	}
	d := backoff(p.lo, p.hi, p.attempt)
	if p.attempt < 64 {
		p.attempt++
	}
	return d
}

// restarted starts the backoff over after the master closed with 1012: the
// node drains and another node behind the same address takes the
// connection now, so the next attempt waits the least.
func (p *reconnectPolicy) restarted() { p.attempt = 0 }

// backoff is the delay before reconnect attempt n (0-based): uniform in
// [c/2, c] where c = min(hi, lo·2ⁿ) ("equal jitter"), so that many
// clients a restarted master lost do not all come back at once, and no
// client retries faster than half the ceiling.
func backoff(lo, hi time.Duration, n int) time.Duration {
	ceil := hi
	if n < 32 {
		if d := lo << n; d > 0 && d < hi {
			ceil = d
		}
	}
	half := ceil / 2
	return half + rand.N(ceil-half+1) //nolint:gosec // jitter needs no cryptographic randomness
}

// refusal maps how the master closed a connection to a permanent error,
// or nil when reconnecting may help. The close reasons are the master's
// (internal/master: announce and the revocation check).
func refusal(err error) error {
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation {
		return nil
	}
	switch ce.Reason {
	case "unauthorized":
		return ErrMachineTaken
	case "token revoked":
		return ErrUnauthorized
	}
	return nil
}

// restarting reports whether the master closed with 1012 (service
// restart): the node drains and asks its peers to reconnect elsewhere.
func restarting(err error) bool {
	return websocket.CloseStatus(err) == websocket.StatusServiceRestart
}

// connectOnce dials, serves the connection until it fails, and reports
// how long it stayed registered (0 when it never got that far).
func (c *Client) connectOnce(ctx context.Context) (time.Duration, error) {
	dialCtx, cancel := context.WithTimeout(ctx, 2*c.cfg.PingInterval)
	defer cancel()
	ws, resp, err := websocket.Dial(dialCtx, c.dialURL, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.cfg.Token}},
		HTTPClient: c.cfg.HTTPClient,
	})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return 0, ErrUnauthorized
		}
		return 0, fmt.Errorf("client: dial %s: %w", c.dialURL, err)
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	return c.serve(ctx, ws)
}

// serve runs one connection: a reader, a writer and a pinger, until one of
// them fails or ctx is done. It reports how long the connection stayed
// registered, and a permanent refusal in preference to whatever error
// ended the connection first.
func (c *Client) serve(ctx context.Context, ws *websocket.Conn) (up time.Duration, err error) {
	cn := &conn{ws: ws, direct: make(chan outFrame, directQueue), done: make(chan struct{}), reads: map[string]*read{}}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Answers of session workers may go out as soon as the reader runs;
	// the writer still puts session.capabilities first.
	c.setConn(cn)
	regCh := make(chan struct{})
	done := make(chan struct{}, 3)
	go func() { cancel(c.reader(ctx, cn)); done <- struct{}{} }()
	go func() { cancel(c.writer(ctx, cn, regCh)); done <- struct{}{} }()
	go func() { cancel(c.pinger(ctx, cn)); done <- struct{}{} }()

	select {
	case <-regCh:
		c.markRegistered(cn)
		c.sendWaiting()
		start := time.Now()
		<-ctx.Done()
		up = time.Since(start)
	case <-ctx.Done():
	}
	err = context.Cause(ctx)
	c.clearConn(cn)
	close(cn.done)
	cn.endReads()
	_ = ws.CloseNow()
	for range 3 {
		<-done
	}
	if r := cn.refusedWith(); r != nil {
		err = r
	}
	return up, err
}

func (c *Client) setConn(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = cn
}

func (c *Client) markRegistered(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == cn {
		close(c.connected)
	}
	c.log.Info("connected to the master", "url", c.dialURL, "machine", c.machine.ID)
}

func (c *Client) clearConn(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != cn {
		return
	}
	c.conn = nil
	select {
	case <-c.connected:
		c.connected = make(chan struct{})
	default:
	}
}

// reader decodes every frame and dispatches it; bad input gets a coded
// error and the connection goes on.
func (c *Client) reader(ctx context.Context, cn *conn) error {
	for {
		typ, data, err := cn.ws.Read(ctx)
		if err != nil {
			if r := refusal(err); r != nil {
				cn.setRefusal(r)
				return r
			}
			return fmt.Errorf("client: read: %w", err)
		}
		if typ != websocket.MessageText {
			c.reply(cn, protocol.ErrorMessage("", "", &protocol.Error{Code: protocol.CodeMalformedJSON, Message: "a message is one JSON object in a text frame"}))
			continue
		}
		m, err := protocol.DecodeFrom(protocol.RoleMaster, data)
		if err != nil {
			var pe *protocol.Error
			if !errors.As(err, &pe) {
				pe = &protocol.Error{Code: protocol.CodeInternal, Message: "the message could not be decoded"}
			}
			id, sid := protocol.ParentOf(data)
			c.reply(cn, protocol.ErrorMessage(id, sid, pe))
			continue
		}
		c.dispatch(cn, m)
	}
}

// writer sends session.capabilities, then the outbox from its oldest
// entry, then live traffic.
func (c *Client) writer(ctx context.Context, cn *conn, registered chan<- struct{}) error {
	if err := c.write(ctx, cn, c.capsData); err != nil {
		return err
	}
	close(registered)
	var cursor int64
	for {
		entries, err := c.out.After(cursor, outboxBatch)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := c.write(ctx, cn, e.data); err != nil {
				return err
			}
			cursor = e.seq
		}
		if len(entries) > 0 {
			// A long backlog must not hold answers back: send what is
			// queued, then read the next batch.
			for {
				select {
				case f := <-cn.direct:
					if err := c.writeFrame(ctx, cn, f); err != nil {
						return err
					}
					continue
				default:
				}
				break
			}
			continue
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case f := <-cn.direct:
			if err := c.writeFrame(ctx, cn, f); err != nil {
				return err
			}
		case <-c.out.Added():
		}
	}
}

func (c *Client) write(ctx context.Context, cn *conn, data []byte) error {
	return c.writeFrame(ctx, cn, outFrame{data: data})
}

func (c *Client) writeFrame(ctx context.Context, cn *conn, f outFrame) error {
	ctx, cancel := context.WithTimeout(ctx, 2*c.cfg.PingInterval)
	defer cancel()
	typ := websocket.MessageText
	if f.binary {
		typ = websocket.MessageBinary
	}
	if err := cn.ws.Write(ctx, typ, f.data); err != nil {
		return fmt.Errorf("client: write: %w", err)
	}
	return nil
}

// pinger drops a peer that does not answer a ping within one interval, so
// a dead master is noticed within two. After each ping answered it lists
// again the interactions the agents wait on (waiting.go): an answer lost
// between master nodes while this connection stayed up is sent again
// within an interval.
func (c *Client) pinger(ctx context.Context, cn *conn) error {
	t := time.NewTicker(c.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, c.cfg.PingInterval)
		err := cn.ws.Ping(pctx)
		cancel()
		if err != nil {
			return fmt.Errorf("client: the master did not answer a ping: %w", err)
		}
		// Its own goroutine: a full queue must not hold the pings up (it
		// ends with the connection at the latest).
		go c.sendWaiting()
	}
}

// reply sends an answer on cn (not kept: it only means something to the
// connection it answers).
func (c *Client) reply(cn *conn, m *protocol.Message) {
	data, err := protocol.Encode(m)
	if err != nil {
		c.log.Error("encode reply", "type", m.Type, "err", err)
		return
	}
	cn.send(data)
}

// sendDirect sends an unkept message on the current connection; offline,
// it is dropped (the master that asked is gone with its connection).
func (c *Client) sendDirect(m *protocol.Message) {
	c.mu.Lock()
	cn := c.conn
	c.mu.Unlock()
	if cn == nil {
		c.log.Debug("offline: dropped", "type", m.Type, "parent_id", m.ParentID)
		return
	}
	c.reply(cn, m)
}

// emit writes a kept message (agent.*, session.opened) to the outbox; the
// writer sends it when connected.
func (c *Client) emit(ctx context.Context, m *protocol.Message) error {
	return c.emitWith(ctx, m)
}

// emitWith is emit, with also run in the same transaction as the write:
// all of it happens or none.
func (c *Client) emitWith(ctx context.Context, m *protocol.Message, also ...func(*sql.Tx) error) error {
	data, err := checkedEncode(m)
	if err != nil {
		return err
	}
	if len(also) == 0 {
		return c.out.Append(ctx, m.MessageID, data)
	}
	return c.out.append(ctx, m.MessageID, data, func(tx *sql.Tx) error {
		for _, f := range also {
			if err := f(tx); err != nil {
				return err
			}
		}
		return nil
	})
}
