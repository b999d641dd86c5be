package master_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// slowSnapshotStore holds every UpdateSession (the snapshot write) while
// held is set, as a slow disk or a large snapshot would.
type slowSnapshotStore struct {
	store.Store
	mu      sync.Mutex
	held    chan struct{} // closed to let the held writes through; nil: not held
	waiting chan struct{} // gets a value when a write starts waiting
}

func (s *slowSnapshotStore) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = make(chan struct{})
}

func (s *slowSnapshotStore) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.held)
	s.held = nil
}

func (s *slowSnapshotStore) UpdateSession(ctx context.Context, row store.Session) error {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held != nil {
		select {
		case s.waiting <- struct{}{}:
		default:
		}
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.UpdateSession(ctx, row)
}

// TestSnapshotWriteDoesNotHoldRelay: storing a running session's
// snapshot every 1,024 events (up to 256 KB of the turn's text) happens
// beside the relay, not in it. While that write is held, the client's
// events are still stored, relayed and acknowledged; once it goes through,
// the newest snapshot is stored.
func TestSnapshotWriteDoesNotHoldRelay(t *testing.T) {
	t.Parallel()
	var ss *slowSnapshotStore
	e := newEnv(t, master.Config{}, func(e *env) {
		e.wrap = func(st store.Store) store.Store {
			ss = &slowSnapshotStore{Store: st, waiting: make(chan struct{}, 1)}
			return ss
		}
	})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	start := turnStart(c, req, "turn-1")
	c.waitAck(start.MessageID)
	events(ui, 2, 1)
	ss.hold()
	const n = 1100 // past snapshotEvery
	var last *protocol.Message
	for range n {
		last = delta(c, info.ID, "turn-1", "x")
	}
	select {
	case <-ss.waiting:
	case <-time.After(wait):
		t.Fatalf("%d events stored no snapshot", n)
	}
	for _, d := range []string{"a", "b", "c"} {
		last = delta(c, info.ID, "turn-1", d)
	}
	c.waitAck(last.MessageID)
	if got := strings.Join(deltaTexts(events(ui, n+3, 3)), ""); got != strings.Repeat("x", n)+"abc" {
		t.Fatalf("relayed while the snapshot was held: %d bytes ending %q", len(got), got[max(0, len(got)-5):])
	}
	ss.release()
	// A change of state waits for the saver: the list says running.
	done := c.emit(info.ID, protocol.TypeTextDone, &protocol.TextDone{TurnID: "turn-1", StopReason: "end_turn"})
	c.waitAck(done.MessageID)
	row, err := e.st.Session(testCtx(t), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var snap protocol.SessionSnapshot
	if err := json.Unmarshal(row.Snapshot, &snap); err != nil {
		t.Fatalf("stored snapshot: %v", err)
	}
	if row.State != protocol.SessionIdle || len(snap.Turns) != 1 || snap.Turns[0].Text != strings.Repeat("x", n)+"abc" {
		t.Fatalf("stored once the turn ended: %s, %d turns", row.State, len(snap.Turns))
	}
}
