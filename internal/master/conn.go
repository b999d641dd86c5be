package master

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// errConnClosed is returned by enqueue once the connection is closing.
var errConnClosed = errors.New("connection closed")

// minWriteTimeout bounds one frame's write; a peer that takes longer is cut.
const minWriteTimeout = 10 * time.Second

// closeInternal closes a connection the master cannot serve right now.
const closeInternal = websocket.StatusInternalError

// abruptGrace is how long a connection dropped for being slow or dead gets
// to take a last error frame before its socket is cut.
const abruptGrace = time.Second

// conn is one WebSocket peer: one goroutine reads (readLoop), one writer
// goroutine drains a bounded queue. Nothing else runs per
// connection while it is idle (the ping is a timer).
type conn struct {
	m      *Master
	ws     *websocket.Conn
	raw    net.Conn // the socket under ws, to cut it without waiting
	id     string
	role   protocol.Role
	token  string          // ID of the token it authenticated with
	scope  map[string]bool // UI: the machines its token may see (nil: all); fixed, as the token's
	origin string          // UI: the origin it reached the master at (login links point there)
	log    *slog.Logger
	ctx    context.Context // done once the connection is finished
	cancel context.CancelFunc

	mu     sync.Mutex // guards the fields below
	q      [][]byte
	roomCh chan struct{} // closed (broadcast) when the writer drains q
	closed bool
	code   websocket.StatusCode
	reason string
	final  []byte // an error message to attempt before closing
	abrupt bool   // the peer is dead or slow: no flush, no close handshake

	wake chan struct{} // cap 1: q or an ack has something for the writer
	stop chan struct{} // closed by close
	done chan struct{} // closed when the writer has finished

	ping *time.Timer

	ui *uiSide     // UI connections
	cl *clientSide // client connections
}

func newConn(m *Master, ws *websocket.Conn, raw net.Conn, role protocol.Role, tok store.Token) *conn {
	var id [8]byte
	_, _ = rand.Read(id[:])
	c := &conn{
		m: m, ws: ws, raw: raw, id: hex.EncodeToString(id[:]), role: role, token: tok.ID,
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	if role == protocol.RoleUI {
		// Before register: the node's deliveries (onSessionChanged) use it
		// as soon as the connection is in m.uis.
		c.ui = &uiSide{subs: map[string]*uiSub{}}
	}
	if role == protocol.RoleClient {
		// Here, not in runClient: a drain (Shutdown) reaches it as soon as
		// the connection is registered.
		c.cl = &clientSide{opened: map[string]bool{}, reads: map[string]string{}}
		c.cl.acks.c = c
	}
	if role == protocol.RoleUI && len(tok.Machines) > 0 {
		c.scope = make(map[string]bool, len(tok.Machines))
		for _, id := range tok.Machines {
			c.scope[id] = true
		}
	}
	c.log = m.log.With("conn", c.id, "role", role.String())
	c.ctx, c.cancel = context.WithCancel(m.ctx)
	ws.SetReadLimit(hardReadLimit)
	return c
}

// sees reports whether this connection's token lets it see machine id and
// its sessions (always, for an unscoped token).
func (c *conn) sees(machineID string) bool {
	return c.scope == nil || c.scope[machineID]
}

// start launches the writer and the ping timer.
func (c *conn) start() {
	go c.writeLoop()
	c.mu.Lock()
	c.ping = time.AfterFunc(c.m.cfg.PingInterval, c.doPing)
	c.mu.Unlock()
}

// finish closes the connection (if the peer did not already) and waits for
// the writer.
func (c *conn) finish() {
	c.close(websocket.StatusNormalClosure, "", nil, false)
	<-c.done
	c.m.unregister(c)
}

// doPing runs on the ping timer's goroutine, only while a ping is out: a
// peer that does not answer within one interval is dropped, so a dead peer
// is noticed at most two intervals after it was last heard.
func (c *conn) doPing() {
	iv := c.m.cfg.PingInterval
	ctx, cancel := context.WithTimeout(c.ctx, iv)
	err := c.ws.Ping(ctx)
	cancel()
	c.mu.Lock()
	closed := c.closed
	if err == nil && !closed {
		c.ping.Reset(iv)
	}
	c.mu.Unlock()
	if err != nil && !closed {
		c.log.Info("dropping a peer that does not answer pings", "err", err)
		c.close(websocket.StatusPolicyViolation, "ping timeout", nil, true)
	}
}

// close starts closing: the writer sends final (if any) and closes the
// WebSocket with code; queued frames are flushed first unless abrupt.
// Only the first call counts.
func (c *conn) close(code websocket.StatusCode, reason string, final *protocol.Error, abrupt bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed, c.code, c.reason, c.abrupt = true, code, reason, abrupt
	if final != nil {
		if b, err := protocol.Encode(protocol.ErrorMessage("", "", final)); err == nil {
			c.final = b
		}
	}
	if c.ping != nil {
		c.ping.Stop()
	}
	c.mu.Unlock()
	close(c.stop)
	if abrupt {
		// The writer may be stuck on a peer that does not read; cut the
		// socket if it has not finished by then.
		time.AfterFunc(abruptGrace, c.cut)
	}
}

// cut ends the connection at once: closing the socket fails every read and
// write under way, whatever coder/websocket is waiting for.
func (c *conn) cut() {
	c.cancel()
	if c.raw != nil {
		_ = c.raw.Close()
	}
}

// drop closes the connection because it cannot keep up.
func (c *conn) drop() {
	c.log.Info("dropping a slow consumer")
	c.m.met.SlowConsumer()
	c.close(websocket.StatusPolicyViolation, "slow consumer", &protocol.Error{
		Code: protocol.CodeSlowConsumer, Message: "you read too slowly and are disconnected; reconnect and resume",
	}, true)
}

// tryEnqueue queues b for the writer without ever blocking: the hub's
// deliveries use it. A full queue drops the connection.
func (c *conn) tryEnqueue(b []byte) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if len(c.q) >= c.m.cfg.QueueSize {
		c.mu.Unlock()
		c.drop()
		return false
	}
	c.q = append(c.q, b)
	c.mu.Unlock()
	c.signal()
	return true
}

// tryEnqueueAll is tryEnqueue for several frames, in order, under one
// lock and one wake-up of the writer: a session's batch reaches a UI so.
func (c *conn) tryEnqueueAll(bs [][]byte) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if len(c.q)+len(bs) > c.m.cfg.QueueSize {
		c.mu.Unlock()
		c.drop()
		return false
	}
	c.q = append(c.q, bs...)
	c.mu.Unlock()
	c.signal()
	return true
}

// enqueue queues b, waiting while the queue is over half full: the
// connection's own answers and replays use it, so they slow down their own
// reader instead of crowding out the live deliveries that use the other half.
func (c *conn) enqueue(ctx context.Context, b []byte) error {
	limit := max(1, c.m.cfg.QueueSize/2)
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return errConnClosed
		}
		if len(c.q) < limit {
			c.q = append(c.q, b)
			c.mu.Unlock()
			c.signal()
			return nil
		}
		if c.roomCh == nil {
			c.roomCh = make(chan struct{})
		}
		room := c.roomCh
		c.mu.Unlock()
		select {
		case <-room:
		case <-c.stop:
			return errConnClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// send encodes m and queues it (blocking, see enqueue).
func (c *conn) send(m *protocol.Message) {
	b, err := protocol.Encode(m)
	if err != nil {
		c.log.Error("encode outgoing message", "type", m.Type, "err", err)
		return
	}
	_ = c.enqueue(c.ctx, b)
}

// sendError answers the message (parentID, sessionID) with a coded error.
func (c *conn) sendError(parentID, sessionID string, e *protocol.Error) {
	c.send(protocol.ErrorMessage(parentID, sessionID, e))
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) writeTimeout() time.Duration {
	return max(minWriteTimeout, 2*c.m.cfg.PingInterval)
}

func (c *conn) write(b []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// writeLoop is the connection's writer: it takes the whole queue at once
// (double-buffered, so an idle connection keeps no big buffer) and writes it.
func (c *conn) writeLoop() {
	defer close(c.done)
	defer c.cancel()
	var batch [][]byte
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			c.closeWS()
			return
		}
		for {
			c.mu.Lock()
			batch, c.q = c.q, batch[:0]
			if c.roomCh != nil {
				close(c.roomCh)
				c.roomCh = nil
			}
			c.mu.Unlock()
			ack := c.takeAck()
			if len(batch) == 0 && ack == nil {
				break
			}
			c.m.met.ConnQueue(len(batch))
			for i, b := range batch {
				batch[i] = nil
				if err := c.write(b, c.writeTimeout()); err != nil {
					c.writeFailed(err)
					return
				}
			}
			if ack != nil {
				if err := c.write(ack, c.writeTimeout()); err != nil {
					c.writeFailed(err)
					return
				}
			}
			select {
			case <-c.stop:
				c.closeWS()
				return
			default:
			}
		}
		if cap(batch) > 64 {
			batch = nil
		}
	}
}

func (c *conn) writeFailed(err error) {
	c.log.Debug("write failed", "err", err)
	c.close(websocket.StatusInternalError, "write failed", nil, true)
	_ = c.ws.CloseNow()
}

// closeWS runs on the writer once close was called.
func (c *conn) closeWS() {
	c.mu.Lock()
	q, final, abrupt, code, reason := c.q, c.final, c.abrupt, c.code, c.reason
	c.q = nil
	c.mu.Unlock()
	if !abrupt {
		if ack := c.takeAck(); ack != nil {
			q = append(q, ack)
		}
		for _, b := range q {
			if err := c.write(b, c.writeTimeout()); err != nil {
				_ = c.ws.CloseNow()
				return
			}
		}
	}
	if final != nil {
		t := c.writeTimeout()
		if abrupt {
			t = abruptGrace / 2
		}
		if err := c.write(final, t); err != nil {
			_ = c.ws.CloseNow()
			return
		}
	}
	if abrupt {
		_ = c.ws.CloseNow()
		return
	}
	// A peer that does not answer the close frame soon (it is not reading)
	// is cut, so a shutdown never waits out coder/websocket's 5 s close
	// handshake.
	t := time.AfterFunc(abruptGrace, c.cut)
	_ = c.ws.Close(code, reason)
	t.Stop()
}

// readLoop reads frames until the connection ends and hands each text frame
// that fits the limit to handle, and each binary frame (a client's artifact
// data, see protocol.ArtifactChunk) to binary; an oversize frame, or a
// binary one where binary is nil, is answered here.
func (c *conn) readLoop(handle, binary func(data []byte)) {
	for {
		typ, r, err := c.ws.Reader(c.ctx)
		if err != nil {
			c.log.Debug("read ended", "err", err, "status", websocket.CloseStatus(err))
			return
		}
		if typ == websocket.MessageBinary && binary != nil {
			data, tooBig, err := readFrame(r, protocol.ArtifactChunkHeader+protocol.ArtifactChunkSize)
			switch {
			case err != nil:
				c.log.Debug("read failed", "err", err)
				return
			case tooBig:
				c.sendError("", "", &protocol.Error{Code: protocol.CodeInvalidValue, Field: "frame",
					Message: "a binary frame is one artifact data chunk of at most 64 KiB"})
			default:
				binary(data)
			}
			continue
		}
		data, tooBig, err := readMessage(r)
		if err != nil {
			c.log.Debug("read failed", "err", err)
			return
		}
		switch {
		case tooBig:
			c.sendError("", "", &protocol.Error{Code: protocol.CodeMessageTooLarge,
				Message: "the message is larger than the limit of 4 MiB"})
		case typ != websocket.MessageText:
			c.sendError("", "", &protocol.Error{Code: protocol.CodeMalformedJSON,
				Message: "a message is one JSON object in a text frame, not a binary frame"})
		default:
			handle(data)
		}
	}
}

// readMessage reads one frame, keeping at most MaxMessageBytes: the rest of
// a longer frame is drained (coder/websocket's own limit, hardReadLimit,
// ends the connection past that).
func readMessage(r io.Reader) (data []byte, tooBig bool, err error) {
	data, err = io.ReadAll(io.LimitReader(r, protocol.MaxMessageBytes+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) <= protocol.MaxMessageBytes {
		return data, false, nil
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, true, err
	}
	return nil, true, nil
}

// readFrame reads a binary frame of at most limit bytes into one buffer of
// that size (a download's frames are all nearly that size, so growing a
// buffer as io.ReadAll does would only make garbage); a longer frame is
// drained and reported.
func readFrame(r io.Reader, limit int) (data []byte, tooBig bool, err error) {
	buf := make([]byte, limit+1)
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:n:n], false, nil
	case err != nil:
		return nil, false, err
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, true, err
	}
	return nil, true, nil
}

// takeAck returns the master.ack frame to send, if one is due.
func (c *conn) takeAck() []byte {
	if c.cl == nil {
		return nil
	}
	through := c.cl.acks.take()
	if through == "" {
		return nil
	}
	b, err := protocol.Encode(protocol.New(protocol.TypeAck, &protocol.Ack{Through: through}))
	if err != nil {
		c.log.Error("encode ack", "err", err)
		return nil
	}
	return b
}

// ackQueue tracks, per client connection, which persistable messages are
// stored. master.ack is cumulative, so it may only name a message once every
// earlier one on the connection is stored, whichever session it went to.
type ackQueue struct {
	mu      sync.Mutex
	pending []*ackEntry
	through string        // newest id whose predecessors are all stored, not yet sent
	idle    chan struct{} // closed when pending empties, for a waiter (drain)
	closed  bool          // draining: accept takes nothing more
	c       *conn
}

type ackEntry struct {
	q    *ackQueue
	id   string
	done bool
}

// add registers the next persistable message, in arrival order.
func (q *ackQueue) add(id string) *ackEntry {
	e := &ackEntry{q: q, id: id}
	q.mu.Lock()
	q.pending = append(q.pending, e)
	q.mu.Unlock()
	return e
}

// stored marks the message stored and wakes the writer when the
// acknowledged prefix grew. Acks coalesce: the writer sends the newest.
func (e *ackEntry) stored() {
	q := e.q
	q.mu.Lock()
	e.done = true
	moved := false
	for len(q.pending) > 0 && q.pending[0].done {
		q.through = q.pending[0].id
		q.pending[0] = nil
		q.pending = q.pending[1:]
		moved = true
	}
	if len(q.pending) == 0 {
		q.pending = nil
		if q.idle != nil {
			close(q.idle)
			q.idle = nil
		}
	}
	q.mu.Unlock()
	if moved {
		q.c.signal()
	}
}

// accept is add for an event to store, unless the queue drains.
func (q *ackQueue) accept(id string) (*ackEntry, bool) {
	e := &ackEntry{q: q, id: id}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false
	}
	q.pending = append(q.pending, e)
	return e, true
}

// drain makes accept refuse from now on and waits until every event
// accepted before is stored (or refused), the connection closes or ctx is
// done. One lock for both: nothing accepted is left out of the wait.
func (q *ackQueue) drain(ctx context.Context, stop <-chan struct{}) {
	q.mu.Lock()
	q.closed = true
	if len(q.pending) == 0 {
		q.mu.Unlock()
		return
	}
	if q.idle == nil {
		q.idle = make(chan struct{})
	}
	idle := q.idle
	q.mu.Unlock()
	select {
	case <-idle:
	case <-stop:
	case <-ctx.Done():
	}
}

func (q *ackQueue) take() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.through
	q.through = ""
	return t
}
