package claudecode

import (
	"context"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// TestSessionTitleChanged: a title Claude Code gives the session
// (stream-json system/session_title_changed) reaches SessionConfig.Title,
// and the client's cleaning makes a valid agent.title of it.
func TestSessionTitleChanged(t *testing.T) {
	var (
		mu     sync.Mutex
		titles []string
	)
	env := openFakeSession(t, "titled", nil, func(c *adapter.SessionConfig) {
		c.Title = func(s string) {
			mu.Lock()
			titles = append(titles, s)
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rec := newRecorder(t)
	if res, err := env.sess.Run(ctx, adaptertest.TextTurn("fix the login"), rec.emit); err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("%+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(titles) != 1 || titles[0] != "  Fix the\tlogin bug\u202e " {
		t.Fatalf("titles %q, want the one Claude Code gave", titles)
	}
	if got := protocol.AgentTitleText(titles[0]); got != "Fix the login bug" {
		t.Fatalf("cleaned to %q", got)
	}
}
