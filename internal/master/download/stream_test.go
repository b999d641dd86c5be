package download

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ferry-dev/ferry/protocol"
)

// TestStreamBoundsItsQueue: a download buffers at most its window; a
// client that sends more (or any data before the range) fails the
// download once what it queued is written, instead of growing memory.
func TestStreamBoundsItsQueue(t *testing.T) {
	id := protocol.NewID()
	chunk := func(off int64) []byte {
		f, err := protocol.AppendArtifactChunk(nil, protocol.ArtifactChunk{RequestID: id, Offset: off, Data: make([]byte, protocol.ArtifactChunkSize)})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctx := context.Background()
	st := NewStream()
	st.Deliver(chunk(0))
	if _, err := st.Next(ctx, time.Second); !errors.Is(err, ErrOverflow) {
		t.Fatalf("data before the range: %v, want ErrOverflow", err)
	}

	st = NewStream()
	st.SetWindow(2 * protocol.ArtifactChunkSize)
	for i := range 3 {
		st.Deliver(chunk(int64(i) * protocol.ArtifactChunkSize))
	}
	for i := range 2 {
		it, err := st.Next(ctx, time.Second)
		if err != nil || it.Chunk.Offset != int64(i)*protocol.ArtifactChunkSize {
			t.Fatalf("queued chunk %d: %+v, %v", i, it.Chunk.Offset, err)
		}
	}
	if _, err := st.Next(ctx, time.Second); !errors.Is(err, ErrOverflow) {
		t.Fatalf("past the window: %v, want ErrOverflow", err)
	}
	// Within the window, taking frames makes room for more.
	st = NewStream()
	st.SetWindow(protocol.ArtifactChunkSize)
	for i := range 10 {
		st.Deliver(chunk(int64(i) * protocol.ArtifactChunkSize))
		if _, err := st.Next(ctx, time.Second); err != nil {
			t.Fatalf("chunk %d within the window: %v", i, err)
		}
	}
	st.Deliver([]byte(`{"type":"nonsense"}`))
	if _, err := st.Next(ctx, time.Second); err == nil {
		t.Fatal("a frame that is neither a message of the download nor data was accepted")
	}
}

// TestStreamStallsAfterItsWait: Next waits its whole wait for a frame and
// no longer. In a synctest bubble the 30 s pass at once: a frame that
// comes a moment before the deadline is served, none by it is ErrStalled.
func TestStreamStallsAfterItsWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const wait = 30 * time.Second
		id := protocol.NewID()
		f, err := protocol.AppendArtifactChunk(nil, protocol.ArtifactChunk{RequestID: id, Data: []byte("late")})
		if err != nil {
			t.Fatal(err)
		}
		st := NewStream()
		st.SetWindow(protocol.ArtifactChunkSize)
		go func() {
			time.Sleep(wait - time.Millisecond)
			st.Deliver(f)
		}()
		start := time.Now()
		it, err := st.Next(t.Context(), wait)
		if err != nil || string(it.Chunk.Data) != "late" {
			t.Fatalf("a frame %v before the deadline: %+v, %v", time.Millisecond, it, err)
		}
		if d := time.Since(start); d != wait-time.Millisecond {
			t.Fatalf("served after %v, want %v", d, wait-time.Millisecond)
		}

		start = time.Now()
		if _, err := st.Next(t.Context(), wait); !errors.Is(err, ErrStalled) {
			t.Fatalf("no frame: %v, want ErrStalled", err)
		}
		if d := time.Since(start); d != wait {
			t.Fatalf("stalled after %v, want exactly %v", d, wait)
		}
	})
}
