package client

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func TestOutbox(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "outbox.db")
	o, err := openOutbox(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{protocol.NewID(), protocol.NewID(), protocol.NewID()}
	for i, id := range ids {
		if err := o.Append(ctx, id, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Full: Append waits, and gives up with its context.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := o.Append(short, protocol.NewID(), []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append on a full outbox = %v", err)
	}
	// An unknown id acks nothing; a known one acks through it.
	if n, err := o.Ack(protocol.NewID()); n != 0 || err != nil {
		t.Fatalf("unknown ack: %d %v", n, err)
	}
	// A blocked Append goes on once an ack makes room.
	blocked := make(chan error, 1)
	fourth := protocol.NewID()
	go func() { blocked <- o.Append(ctx, fourth, []byte("3")) }()
	if n, err := o.Ack(ids[1]); n != 2 || err != nil {
		t.Fatalf("ack: %d %v", n, err)
	}
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	got, err := o.After(0, 10)
	if err != nil || len(got) != 2 || got[0].id != ids[2] || got[1].id != fourth || string(got[1].data) != "3" {
		t.Fatalf("After = %+v, %v", got, err)
	}
	if rest, _ := o.After(got[0].seq, 10); len(rest) != 1 || rest[0].id != fourth {
		t.Fatalf("After(seq) = %+v", rest)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened, it holds what was not acked, in order.
	o, err = openOutbox(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = o.Close() }()
	if o.Len() != 2 {
		t.Fatalf("reopened with %d entries", o.Len())
	}
	got, _ = o.After(0, 10)
	if len(got) != 2 || got[0].id != ids[2] || got[1].id != fourth {
		t.Fatalf("reopened: %+v", got)
	}
	// Close fails an Append on a full outbox, also one already waiting.
	if err := o.Append(ctx, protocol.NewID(), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	go func() { blocked <- o.Append(ctx, protocol.NewID(), []byte("{}")) }()
	_ = o.Close()
	select {
	case err := <-blocked:
		if !errors.Is(err, errOutboxClosed) {
			t.Errorf("blocked Append after Close = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not wake a blocked Append")
	}
}

// BenchmarkOutbox measures one message's way through the outbox: append,
// read by the writer, ack.
func BenchmarkOutbox(b *testing.B) {
	o, err := openOutbox(filepath.Join(b.TempDir(), "outbox.db"), DefaultOutboxLimit)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = o.Close() }()
	data := make([]byte, 1024)
	ctx := context.Background()
	var cursor int64
	b.ReportAllocs()
	for b.Loop() {
		id := protocol.NewID()
		if err := o.Append(ctx, id, data); err != nil {
			b.Fatal(err)
		}
		es, err := o.After(cursor, outboxBatch)
		if err != nil || len(es) != 1 {
			b.Fatal(err)
		}
		cursor = es[0].seq
		if _, err := o.Ack(id); err != nil {
			b.Fatal(err)
		}
	}
}
