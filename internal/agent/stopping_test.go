package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
)

// A prompt cancelled with ErrStopping, or with the caller's
// Config.StopCause, as its cause leaves a history saying ferry restarted;
// a plain cancel does not.
func TestStoppingCauseMarksRestart(t *testing.T) {
	t.Parallel()
	errOwn := errors.New("the caller's own stopping cause")
	for _, tc := range []struct {
		name    string
		cause   error
		restart bool
	}{
		{"ErrStopping", agent.ErrStopping, true},
		{"Config.StopCause", errOwn, true},
		{"wrapped StopCause", errors.Join(errors.New("stopping"), errOwn), true},
		{"a user's cancel", context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newMem(step{text: []string{"partial"}, block: true})
			a, _ := newAgent(t, p, func(c *agent.Config) { c.StopCause = errOwn })
			ctx, cancel := context.WithCancelCause(testCtx(t))
			go func() { <-p.started; cancel(tc.cause) }()
			if _, err := a.Run(ctx, textTurn("long"), newRecorder().emit); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
			b, err := json.Marshal(a.History())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(b), agent.RestartedNote); got != tc.restart {
				t.Errorf("history says ferry restarted: %v, want %v: %s", got, tc.restart, b)
			}
		})
	}
}
