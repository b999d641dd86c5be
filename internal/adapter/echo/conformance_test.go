package echo

import (
	"context"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// TestConformance runs the adapter conformance suite on echo and checks
// its row of the table in docs/adapters.md.
func TestConformance(t *testing.T) {
	f := adaptertest.Fixture{
		Name:    "echo",
		Adapter: New(WithDelay(0)),
		Answer:  "hello there",
		Hang:    "ask: may I?", // waits for an answer that never comes
		Effects: map[string]adaptertest.Effect{
			adapter.SettingTargetTokenRatio: func(t *testing.T, s adapter.Session) {
				adaptertest.RunTurn(t, s, adaptertest.Request("one two three four five six seven eight", protocol.InputText))
				ratio := 0.5
				done, err := s.Compact(context.Background(), &protocol.SessionCompact{TargetTokenRatio: &ratio})
				if err != nil {
					t.Fatal(err)
				}
				if done.TokensBefore == 0 || done.TokensAfter != int64(float64(done.TokensBefore)*ratio) {
					t.Errorf("compaction %d → %d, want half", done.TokensBefore, done.TokensAfter)
				}
			},
		},
	}
	adaptertest.CheckTable(t, f.Name, adaptertest.Run(t, f))
}
