package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/protocol"
)

// runClient runs a client of m until the test ends and returns Run's result
// channel.
func runClient(t *testing.T, m *fakeMaster, opts ...envOpt) (*Client, <-chan error) {
	t.Helper()
	c, err := New(m.config(t, newWorkspace(t), t.TempDir(), opts...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		_ = c.Close()
	})
	return c, runErr
}

// refuse closes fc the way the real master refuses a connection: a final
// unauthorized error, then a policy-violation close with reason.
func (fc *fakeConn) refuse(reason, message string) {
	fc.send(protocol.ErrorMessage("", "", &protocol.Error{Code: protocol.CodeUnauthorized, Message: message}))
	_ = fc.ws.Close(websocket.StatusPolicyViolation, reason)
}

// TestPermanentRefusalsStopRetrying: a machine registered with another
// token, and a token revoked while connected, end Run with an error that
// says so after one attempt, instead of a reconnect loop (issue 16 item 1:
// before, the client retried every 40-160 ms forever).
func TestPermanentRefusalsStopRetrying(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		reason, message string
		want            error
	}{
		{"unauthorized", "this machine is registered with another client token", ErrMachineTaken},
		{"token revoked", "the token of this connection was revoked or has expired", ErrUnauthorized},
	} {
		t.Run(c.reason, func(t *testing.T) {
			ctx := testContext(t)
			m := newFakeMaster(t)
			_, runErr := runClient(t, m)
			fc, _ := m.accept(ctx)
			fc.refuse(c.reason, c.message)
			select {
			case err := <-runErr:
				if !errors.Is(err, c.want) {
					t.Fatalf("Run = %v, want %v", err, c.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run keeps retrying after a refusal retrying cannot fix")
			}
			m.noConn()
		})
	}
}

// TestRefusal classifies every way the master closes a client connection.
func TestRefusal(t *testing.T) {
	t.Parallel()
	closeErr := func(code websocket.StatusCode, reason string) error {
		return fmt.Errorf("client: read: %w", websocket.CloseError{Code: code, Reason: reason})
	}
	for _, c := range []struct {
		err  error
		want error
	}{
		{closeErr(websocket.StatusPolicyViolation, "unauthorized"), ErrMachineTaken},
		{closeErr(websocket.StatusPolicyViolation, "token revoked"), ErrUnauthorized},
		// Transient: reconnecting is the cure.
		{closeErr(websocket.StatusPolicyViolation, "replaced by a newer connection"), nil},
		{closeErr(websocket.StatusPolicyViolation, "slow consumer"), nil},
		{closeErr(websocket.StatusPolicyViolation, "ping timeout"), nil},
		{closeErr(websocket.StatusGoingAway, "master shutting down"), nil},
		{closeErr(websocket.StatusInternalError, "internal error"), nil},
		{closeErr(websocket.StatusInternalError, "unauthorized"), nil},
		{io.EOF, nil},
		{nil, nil},
	} {
		if got := refusal(c.err); !errors.Is(got, c.want) || (c.want == nil && got != nil) {
			t.Errorf("refusal(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestFlappingMasterBacksOff: a master that accepts the client and drops
// it at once (here: an internal error after every registration) is retried
// with a growing delay, not in a tight loop, even though every attempt
// gets as far as registering.
func TestFlappingMasterBacksOff(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	lo, hi := 10*time.Millisecond, 80*time.Millisecond
	_, runErr := runClient(t, m, func(c *Config) { c.MinBackoff, c.MaxBackoff = lo, hi })
	var at []time.Time
	for range 8 {
		fc, _ := m.accept(ctx)
		at = append(at, time.Now())
		_ = fc.ws.Close(websocket.StatusInternalError, "internal error")
	}
	// Attempt n waits at least min(hi, lo·2ⁿ)/2; a loaded machine only
	// makes the gaps longer. From the fourth reconnect on that is hi/2.
	for i := 4; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < hi/2-5*time.Millisecond {
			t.Errorf("reconnect %d came %v after the previous one; want at least %v", i, gap, hi/2)
		}
	}
	select {
	case err := <-runErr:
		t.Fatalf("Run ended on a transient failure: %v", err)
	default:
	}
}

// TestReconnectPolicy: the delay doubles (with jitter in [c/2, c]) up to
// the cap, and starts over only after a connection that stayed up for
// the stable time.
func TestReconnectPolicy(t *testing.T) {
	t.Parallel()
	p := reconnectPolicy{lo: 10 * time.Millisecond, hi: 80 * time.Millisecond, stable: time.Second}
	check := func(up, ceil time.Duration) {
		t.Helper()
		if d := p.next(up); d < ceil/2 || d > ceil {
			t.Fatalf("next(%v) = %v, want in [%v, %v]", up, d, ceil/2, ceil)
		}
	}
	check(0, 10*time.Millisecond)
	check(0, 20*time.Millisecond)
	check(999*time.Millisecond, 40*time.Millisecond) // up, but not for long
	check(0, 80*time.Millisecond)
	for range 100 {
		check(0, 80*time.Millisecond)
	}
	check(time.Second, 10*time.Millisecond) // a stable connection resets
	check(0, 20*time.Millisecond)
}

// TestRestartReconnectsPromptly: a master node that drains closes with 1012
// (service restart); the next attempt waits at most MinBackoff however far
// the backoff had grown, and no other close code does that.
func TestRestartReconnectsPromptly(t *testing.T) {
	t.Parallel()
	closeErr := func(code websocket.StatusCode) error {
		return fmt.Errorf("client: read: %w", websocket.CloseError{Code: code, Reason: "master draining; reconnect"})
	}
	if !restarting(closeErr(websocket.StatusServiceRestart)) {
		t.Fatal("a 1012 close is not seen as a restart")
	}
	for _, err := range []error{closeErr(websocket.StatusGoingAway), closeErr(websocket.StatusInternalError), io.EOF, nil} {
		if restarting(err) {
			t.Fatalf("restarting(%v) = true", err)
		}
	}
	p := reconnectPolicy{lo: 10 * time.Millisecond, hi: time.Hour, stable: time.Hour}
	for range 20 {
		p.next(0)
	}
	if d := p.next(0); d < time.Minute {
		t.Fatalf("after 21 failures the delay is %v; the test needs a grown backoff", d)
	}
	p.restarted()
	if d := p.next(0); d > p.lo {
		t.Fatalf("after a restart the delay is %v, want at most %v", d, p.lo)
	}
}
