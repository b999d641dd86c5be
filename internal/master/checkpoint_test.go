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

// TestSnapshotWriteDoesNotHoldRelay: storing a session's snapshot (up to
// 256 KB of a running turn's text, every 1,024 events) happens beside the
// relay, not in it. While a snapshot write is held, the client's events are
// still stored, relayed and acknowledged; once it goes through, the stored
// snapshot is the newest state, the events after it included.
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
	ss.hold()
	// The turn's start changes the session's state, which is stored at once.
	req := prompt(ui, c, info.ID, "go")
	start := turnStart(c, req, "turn-1")
	select {
	case <-ss.waiting:
	case <-time.After(wait):
		t.Fatal("the turn's start stored no snapshot")
	}
	c.waitAck(start.MessageID)
	var last *protocol.Message
	for _, d := range []string{"a", "b", "c"} {
		last = delta(c, info.ID, "turn-1", d)
	}
	c.waitAck(last.MessageID)
	if got := strings.Join(deltaTexts(events(ui, 5, 1)[2:]), ""); got != "abc" {
		t.Fatalf("relayed while the snapshot was held: %q", got)
	}
	ss.release()
	waitFor(t, "the newest snapshot stored", func() bool {
		row, err := e.st.Session(testCtx(t), info.ID)
		if err != nil || len(row.Snapshot) == 0 {
			return false
		}
		var snap protocol.SessionSnapshot
		if err := json.Unmarshal(row.Snapshot, &snap); err != nil {
			t.Fatalf("stored snapshot: %v", err)
		}
		return len(snap.Turns) == 1 && snap.Turns[0].TurnID == "turn-1" && row.State == protocol.SessionRunning
	})
}
