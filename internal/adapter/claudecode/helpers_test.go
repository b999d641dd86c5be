package claudecode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/protocol"
)

// testTimeout bounds every wait of a test, so a hung CLI fails the test.
const testTimeout = 60 * time.Second

// recorder is a turn's Emit: adaptertest's recorder, checking every event
// the way the client does; like the client's, its emit returns the turn
// context's error.
type recorder struct {
	*adaptertest.Recorder
	t *testing.T
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{Recorder: adaptertest.NewRecorder(), t: t}
}

func (r *recorder) emit(ctx context.Context, typ string, payload any) error {
	if err := adaptertest.CheckEvent(typ, payload); err != nil {
		r.t.Error(err)
	}
	_ = r.Emit(ctx, typ, payload)
	return ctx.Err()
}

// nextAsk waits for the next interaction request.
func (r *recorder) nextAsk(ctx context.Context) *protocol.InteractionRequest {
	r.t.Helper()
	return r.NextAsk(r.t, ctx)
}

// fakeEnv is a session on the fake CLI.
type fakeEnv struct {
	ad   *Adapter
	sess *session
	ws   string
	log  string // the fake's log file
	logs *adaptertest.LogBuffer
}

// openFake opens a session whose claude is this test binary playing
// scenario.
func openFake(t *testing.T, scenario string, mut func(*Config)) *fakeEnv {
	t.Helper()
	return openFakeSession(t, scenario, mut, nil)
}

// openFakeSession is openFake with the session's config changed by sc.
func openFakeSession(t *testing.T, scenario string, mut func(*Config), sc func(*adapter.SessionConfig)) *fakeEnv {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	logs := &adaptertest.LogBuffer{}
	fakeLog := filepath.Join(dir, "fake.log")
	cfg := Config{
		Command: os.Args[0],
		Env:     []string{envFakeScenario + "=" + scenario, envFakeLog + "=" + fakeLog},
		Logger:  logs.Logger(),
	}
	if mut != nil {
		mut(&cfg)
	}
	ad := New(cfg)
	scfg := adapter.SessionConfig{SessionID: "sess-1", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: ws}}
	if sc != nil {
		sc(&scfg)
	}
	s := adaptertest.Open(t, context.Background(), ad, scfg)
	return &fakeEnv{ad: ad, sess: s.(*session), ws: ws, log: fakeLog, logs: logs}
}

// waitGone waits (boundedly) for a process to be gone.
func waitGone(ctx context.Context, pid int) bool {
	for adaptertest.ProcessAlive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// processesWith lists the pids whose command line contains s.
func processesWith(s string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			continue
		}
		var pid int
		for _, c := range filepath.Base(d) {
			pid = pid*10 + int(c-'0')
		}
		if adaptertest.ProcessAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
