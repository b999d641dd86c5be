package download

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

var (
	// ErrStalled is Next's answer when no frame came within the wait.
	ErrStalled = errors.New("the download stalled")
	// ErrOverflow is a stream's failure when the client sent data past its window.
	ErrOverflow = errors.New("the client sent past its window")
)

// Stream is the receiving end of one read of a file from a client: its
// frames (the file's description, data, the end), queued until the
// download's goroutine takes them. Deliver never blocks; the window the
// client honours bounds the queue, and a client that does not honour it
// fails the download.
type Stream struct {
	mu       sync.Mutex
	items    []Frame
	buffered int64 // data bytes queued
	window   int64 // 0 until the range is sent
	failed   error
	wake     chan struct{} // cap 1
}

// NewStream returns an empty stream with no window yet: data before
// SetWindow is a client's fault.
func NewStream() *Stream { return &Stream{wake: make(chan struct{}, 1)} }

// Frame is one frame of a read: exactly one of its fields is set.
type Frame struct {
	Meta  *protocol.ArtifactMeta
	End   *protocol.ArtifactEnd
	Chunk protocol.ArtifactChunk
}

// SetWindow sets the data bytes the stream may hold (the range's window).
func (st *Stream) SetWindow(n int64) {
	st.mu.Lock()
	st.window = n
	st.mu.Unlock()
}

// Deliver takes one frame off the wire; it is the topic's subscriber.
func (st *Stream) Deliver(data []byte) {
	var it Frame
	var bad error
	if len(data) > 0 && data[0] == '{' {
		msg, err := protocol.Decode(data)
		switch {
		case err != nil:
			bad = err
		default:
			switch p := msg.Payload.(type) {
			case *protocol.ArtifactMeta:
				it.Meta = p
			case *protocol.ArtifactEnd:
				it.End = p
			default:
				bad = fmt.Errorf("unexpected %s in a download", msg.Type)
			}
		}
	} else {
		it.Chunk, bad = protocol.DecodeArtifactChunk(data)
	}
	st.mu.Lock()
	switch {
	case st.failed != nil:
	case bad != nil:
		st.failed = bad
	default:
		st.buffered += int64(len(it.Chunk.Data))
		if st.buffered > st.window {
			st.failed = ErrOverflow
		} else {
			st.items = append(st.items, it)
		}
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// Next returns the next frame, waiting up to wait for it (ErrStalled).
func (st *Stream) Next(ctx context.Context, wait time.Duration) (Frame, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		st.mu.Lock()
		if len(st.items) > 0 {
			it := st.items[0]
			st.items[0] = Frame{}
			st.items = st.items[1:]
			st.buffered -= int64(len(it.Chunk.Data))
			st.mu.Unlock()
			return it, nil
		}
		failed := st.failed
		st.mu.Unlock()
		if failed != nil {
			return Frame{}, failed
		}
		select {
		case <-st.wake:
		case <-ctx.Done():
			return Frame{}, ctx.Err()
		case <-t.C:
			return Frame{}, ErrStalled
		}
	}
}

// --- the client connection's side ---
