package push

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDialGuard: the delivery client refuses a loopback address at dial
// time (a name could resolve to one), before any connection is made.
func TestDialGuard(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	for _, u := range []string{"https://" + ln.Addr().String() + "/push/x", "http://" + ln.Addr().String() + "/push/x"} {
		resp, err := guardedClient(false, 5*time.Second).Post(u, "application/octet-stream", nil)
		if err == nil {
			_ = resp.Body.Close()
			t.Fatalf("POST %s through the guarded client succeeded", u)
		}
		if !errors.Is(err, errForbiddenAddr) {
			t.Fatalf("POST %s = %v, want the address refused", u, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
	// Allowed for tests, it connects.
	resp, err := guardedClient(true, 5*time.Second).Post("http://"+ln.Addr().String()+"/", "text/plain", nil)
	if err == nil {
		_ = resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for accepted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if accepted.Load() == 0 {
		t.Fatal("with AllowLoopback the client did not connect")
	}
}

func TestRetryAfter(t *testing.T) {
	if d := retryAfter("7"); d != 7*time.Second {
		t.Fatalf("retryAfter(7) = %v", d)
	}
	if d := retryAfter(time.Now().Add(time.Minute).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT")); d < 50*time.Second || d > time.Minute {
		t.Fatalf("retryAfter(date) = %v", d)
	}
	if d := retryAfter("soon"); d != 0 {
		t.Fatalf("retryAfter(soon) = %v", d)
	}
	s := &Service{cfg: Config{Backoff: time.Second, MaxBackoff: 10 * time.Second}}
	for n := 1; n < 40; n++ {
		d := s.backoff(n, 0)
		if d <= 0 || d > 10*time.Second {
			t.Fatalf("backoff(%d) = %v", n, d)
		}
	}
	if d := s.backoff(1, time.Hour); d != 10*time.Second {
		t.Fatalf("a Retry-After over MaxBackoff gave %v", d)
	}
}

// TestLogErrCutsThePath: an error that quotes the endpoint, as the HTTP
// client's *url.Error does (wrapped or not), or in any other wording, is
// logged with the origin only.
func TestLogErrCutsThePath(t *testing.T) {
	const ep = "https://push.example.com/wpush/v2/gAAAAABcapability?k=secretquery"
	ue := &url.Error{Op: "Post", URL: ep, Err: errors.New("read: connection reset by peer")}
	for _, err := range []error{
		ue,
		fmt.Errorf("send: %w", ue),
		errors.New("cannot reach " + ep),
		errors.New("bad path /wpush/v2/gAAAAABcapability"),
		errors.New("bad query k=secretquery"),
	} {
		got := logErr(err, ep)
		if strings.Contains(got, "capability") || strings.Contains(got, "secretquery") {
			t.Errorf("logErr(%q) = %q, holds the path", err, got)
		}
	}
	if got := logErr(ue, ep); got != "Post https://push.example.com: read: connection reset by peer" {
		t.Errorf("logErr(url.Error) = %q", got)
	}
}
