//go:build unix

package transcript_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/transcript"
)

// TestKillAfterSave runs a child process (this test binary) that saves
// steps and kills itself with SIGKILL right after one returns: no deferred
// Close, no clean shutdown. Every step it saved must be there on reopening.
func TestKillAfterSave(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "transcripts.db")
	for _, steps := range []int{1, 7} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "TRANSCRIPT_KILL_DB="+path, "TRANSCRIPT_KILL_STEPS="+strconv.Itoa(steps))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the child was not killed: %v\n%s", err, out)
		}
		st := open(t, path, transcript.Options{})
		got, err := st.Load(context.Background(), "s1")
		if err != nil {
			t.Fatal(err)
		}
		if want := steps2(steps); !reflect.DeepEqual(got.Messages, want) || !got.TurnOpen {
			t.Fatalf("after SIGKILL at step %d: %d messages, turn open %v; want %d, open", steps, len(got.Messages), got.TurnOpen, len(want))
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// steps2 is the history after n steps of a turn.
func steps2(n int) []llm.Message {
	h := []llm.Message{text(llm.RoleUser, "go")}
	for i := range n {
		if i%2 == 0 {
			h = append(h, text(llm.RoleAssistant, "step "+strconv.Itoa(i)))
		} else {
			h = append(h, text(llm.RoleUser, "result "+strconv.Itoa(i)))
		}
	}
	return h
}

// TestMain makes this test binary the child of TestKillAfterSave when
// TRANSCRIPT_KILL_DB is set: it saves that many steps and kills itself.
func TestMain(m *testing.M) {
	if path := os.Getenv("TRANSCRIPT_KILL_DB"); path != "" {
		killChild(path)
	}
	os.Exit(m.Run())
}

func killChild(path string) {
	steps, _ := strconv.Atoi(os.Getenv("TRANSCRIPT_KILL_STEPS"))
	st, err := transcript.Open(context.Background(), path, transcript.Options{})
	if err != nil {
		panic(err)
	}
	for i := 1; i <= steps; i++ {
		if err := st.Save(context.Background(), "s1", transcript.Transcript{Messages: steps2(i), TurnOpen: true}); err != nil {
			panic(err)
		}
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
