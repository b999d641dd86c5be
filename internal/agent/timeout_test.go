package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/protocol"
)

// The permission timeout runs on the agent's own timer. In a synctest
// bubble its ten minutes pass at once, and the test can look a moment
// before the deadline (still asking, nothing written) and at it (denied).
func TestPermissionTimeoutOnTheAgentsTimer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const wait = 10 * time.Minute
		p := newMem(
			step{tools: []llm.Block{toolCall("w", "Write", map[string]any{"file_path": "f.txt", "content": "x"})}},
			step{text: []string{"ok"}},
		)
		a, dir := newAgent(t, p, func(c *agent.Config) { c.InteractionTimeout = wait })
		rec := newRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := a.Run(ctx, textTurn("write"), rec.emit)
			done <- err
		}()
		ir := <-rec.asks
		if ir.TimeoutMS != int(wait/time.Millisecond) {
			t.Fatalf("timeout_ms %d, want %d", ir.TimeoutMS, wait/time.Millisecond)
		}

		time.Sleep(wait - time.Millisecond)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the turn ended %v before the deadline: %v", time.Millisecond, err)
		default:
		}

		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != wait {
			t.Fatalf("denied after %v, want exactly %v", d, wait)
		}
		if _, err := os.Stat(filepath.Join(dir, "f.txt")); !os.IsNotExist(err) {
			t.Fatalf("the file was written without an answer (stat: %v)", err)
		}
		fin := rec.finished()
		if len(fin) != 1 || fin[0].Status != protocol.ToolDenied {
			t.Fatalf("tool results %+v, want one denied", fin)
		}
	})
}
