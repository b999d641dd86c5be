package master

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// Broker topics. Everything that crosses from one connection to another goes
// through one of them, so master nodes sharing a broker route alike.
const presenceTopic = "presence"

// sessionTopic carries a session's persisted events (frameBuilder) to the
// UIs subscribed to it.
func sessionTopic(id string) string { return "session." + id }

// machineTopic carries control messages (controlFrame) to the connection of
// the machine's client.
func machineTopic(id string) string { return "machine." + id }

// connTopic carries wire messages meant for one UI connection: search
// candidates and the client's errors about that UI's messages.
func connTopic(id string) string { return "conn." + id }

// replyTopic carries the client's answer to one control message (an open,
// a worktree's removal) to the task waiting for it (askClient).
func replyTopic(msgID string) string { return "reply." + msgID }

// artifactTopic carries one download's stream from the connection of the
// machine's client to the request serving it: the client's
// session.artifact.meta and session.artifact.end as they came, its binary
// data frames, or the master's own end when the client went away. The
// machine is part of the name, so a client can only ever reach downloads
// of its own machine.
func artifactTopic(machineID, requestID string) string {
	return "artifact." + machineID + "." + requestID
}

// wireError turns any error into what may travel: a *protocol.Error as it
// is, a missing record as not_found, anything else as internal, with the
// details logged and never sent. It is the one place that mapping happens.
func (m *Master) wireError(err error, what string) *protocol.Error {
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, store.ErrNotFound):
		return &protocol.Error{Code: protocol.CodeNotFound, Message: "no such " + what}
	}
	m.log.Error(what, "err", err)
	return errInternal
}

// errInternal is all a peer learns of a failure of the master's own.
var errInternal = &protocol.Error{Code: protocol.CodeInternal, Message: "internal error"}

// epochField is the `"epoch":"…",` fragment spliced into relayed events.
func epochField(epoch string) []byte {
	q, _ := json.Marshal(epoch) // a string always marshals
	return append(append([]byte(`"epoch":`), q...), ',')
}

// appendWithSeq appends to dst the wire message data (a JSON object without
// seq and epoch, as the store keeps it) with seq and epoch spliced in first.
func appendWithSeq(dst, data []byte, seq uint64, epochFld []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, ',')
	dst = append(dst, epochFld...)
	return append(dst, data[1:]...)
}

// A session topic carries batches of a session's stored events, in seq
// order: one broker message per batch the session's writer stored (split
// at maxFrameBytes), so that a burst costs one publish and one delivery per
// subscriber instead of one per event. Each event is its seq (8 bytes, big
// endian), its length (4 bytes, big endian), then the wire message with seq
// and epoch set. The seq up front lets a subscriber skip what it replayed
// without parsing JSON.
const frameHeader = 12

// maxFrameBytes is where a batch is split into several broker messages,
// well under NATS's default 1 MB payload limit; a bigger event goes alone.
const maxFrameBytes = 256 << 10

// frameBuilder builds the session topic messages of one batch.
type frameBuilder struct {
	epochFld []byte
	// left is the room the rest of the batch needs (reserve): a buffer
	// is made that size, not a fixed 16 KB that one small event, the
	// common batch below a few thousand events/s, would mostly waste.
	left int
	cur  []byte
	msgs [][]byte
}

// reserve counts an event of n bytes (as stored) that add will get.
func (b *frameBuilder) reserve(n int) {
	b.left += frameHeader + n + 40 + len(b.epochFld)
}

// add appends the event (data as stored, without seq and epoch) and
// returns its wire form, which shares the message's memory.
func (b *frameBuilder) add(data []byte, seq uint64) []byte {
	size := frameHeader + len(data) + 40 + len(b.epochFld)
	if len(b.cur) > 0 && len(b.cur)+size > maxFrameBytes {
		b.msgs = append(b.msgs, b.cur)
		b.cur = nil
	}
	if b.cur == nil {
		b.cur = make([]byte, 0, max(size, min(maxFrameBytes, b.left)))
	}
	b.left -= size
	at := len(b.cur)
	b.cur = binary.BigEndian.AppendUint64(b.cur, seq)
	b.cur = append(b.cur, 0, 0, 0, 0)
	b.cur = appendWithSeq(b.cur, data, seq, b.epochFld)
	n := len(b.cur) - at - frameHeader
	binary.BigEndian.PutUint32(b.cur[at+8:], uint32(n))
	return b.cur[at+frameHeader : len(b.cur) : len(b.cur)]
}

// done returns the messages to publish, in order.
func (b *frameBuilder) done() [][]byte {
	if len(b.cur) > 0 {
		b.msgs = append(b.msgs, b.cur)
		b.cur = nil
	}
	return b.msgs
}

// eachEvent calls f with every event of a session topic message, in order,
// until f returns false; a malformed message stops it.
func eachEvent(f []byte, fn func(seq uint64, wire []byte) bool) {
	for len(f) >= frameHeader {
		seq := binary.BigEndian.Uint64(f)
		n := int(binary.BigEndian.Uint32(f[8:]))
		if n < 1 || n > len(f)-frameHeader {
			return
		}
		if !fn(seq, f[frameHeader:frameHeader+n:frameHeader+n]) {
			return
		}
		f = f[frameHeader+n:]
	}
}

// frameEvents counts the events of a session topic message.
func frameEvents(f []byte) int {
	n := 0
	eachEvent(f, func(uint64, []byte) bool { n++; return true })
	return n
}

// controlFrame is what a machine topic carries: one control message for the
// client, with what its connection needs to route the answer and to open
// the session first when it has not yet on this connection.
type controlFrame struct {
	ReplyTo   string // topic for the client's direct answers; "" for none
	SessionID string
	Type      string
	MessageID string
	// Workspace, Adapter, Mode and PermTimeout (the session's own
	// permission timeout in ms, "" for the client's default) describe the
	// session for the control.session.open sent ahead of the message when
	// needed.
	Workspace, Adapter, Mode, PermTimeout string
	// Model and Effort are the session's own model and thinking effort
	// ("" for the adapter's defaults), for the same control.session.open.
	Model, Effort string
	// Stream is the request_id of a control.artifact.* message, which
	// needs no open session on the client; "" for every other message.
	Stream string
	// Isolation (JSON, "" for none) and Title make that open an isolated
	// one that finds the session's worktree again.
	Isolation, Title string
	Msg              []byte // the wire message
}

// encode writes the fields as uvarint-prefixed strings, then Msg: cheaper
// than JSON for a 4 MiB prompt and needs no escaping.
func (f *controlFrame) encode() []byte {
	n := len(f.Msg) + 8*binary.MaxVarintLen32
	for _, s := range f.strings() {
		n += len(*s)
	}
	b := make([]byte, 0, n)
	for _, s := range f.strings() {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	return append(b, f.Msg...)
}

func (f *controlFrame) strings() []*string {
	return []*string{&f.ReplyTo, &f.SessionID, &f.Type, &f.MessageID, &f.Workspace, &f.Adapter, &f.Mode, &f.Stream, &f.PermTimeout, &f.Model, &f.Effort, &f.Isolation, &f.Title}
}

func decodeControlFrame(b []byte) (*controlFrame, error) {
	f := &controlFrame{}
	for _, s := range f.strings() {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, fmt.Errorf("control frame: bad field")
		}
		*s = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	f.Msg = b
	return f, nil
}
