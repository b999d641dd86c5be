package apierr_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/internal/apierr"
)

func TestKindForStatus(t *testing.T) {
	for status, want := range map[int]string{
		400: llm.KindBadRequest, 404: llm.KindBadRequest, 413: llm.KindBadRequest, 422: llm.KindBadRequest,
		401: llm.KindAuth, 403: llm.KindAuth,
		429: llm.KindRateLimited,
		529: llm.KindOverloaded, 503: llm.KindOverloaded,
		500: llm.KindServer, 502: llm.KindServer, 504: llm.KindServer, 408: llm.KindServer, 409: llm.KindServer,
	} {
		if got := apierr.KindForStatus(status); got != want {
			t.Errorf("KindForStatus(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		h    map[string]string
		want time.Duration
		tol  time.Duration
	}{
		{map[string]string{"Retry-After": "20"}, 20 * time.Second, 0},
		{map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond, 0},
		{map[string]string{"Retry-After": "20", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond, 0},
		{map[string]string{"Retry-After": future}, 90 * time.Second, 5 * time.Second},
		{map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0, 0}, // past
		{map[string]string{"Retry-After": "-3"}, 0, 0},
		{map[string]string{"Retry-After": "soon"}, 0, 0},
		{map[string]string{"Retry-After": "1e300"}, 0, 0},
		{map[string]string{}, 0, 0},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.h {
			h.Set(k, v)
		}
		got := apierr.RetryAfter(h)
		if got < c.want-c.tol || got > c.want+c.tol {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.h, got, c.want)
		}
	}
	if apierr.RetryAfter(nil) != 0 {
		t.Error("RetryAfter(nil) != 0")
	}
}

func TestSafeMessage(t *testing.T) {
	if got := apierr.SafeMessage("Incorrect API key provided: sk-abc123. Check it.", "sk-abc123", "x"); strings.Contains(got, "sk-abc123") || !strings.Contains(got, "[redacted]") {
		t.Errorf("key not redacted: %q", got)
	}
	if got := apierr.SafeMessage("a\nb\x1b[31mc\x00", "", "x"); got != "a b[31mc" {
		t.Errorf("control characters kept: %q", got)
	}
	if got := apierr.SafeMessage("  ", "", "fallback"); got != "fallback" {
		t.Errorf("empty message = %q, want the fallback", got)
	}
	long := strings.Repeat("é", 400)
	got := apierr.SafeMessage(long, "", "x")
	if !utf8.ValidString(got) || len(got) > 310 {
		t.Errorf("long message cut badly: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

func FuzzSafeMessage(f *testing.F) {
	f.Add("Incorrect API key provided: sk-abc123", "sk-abc123")
	f.Add(strings.Repeat("日本", 200), "")
	f.Add("\x00\xff\xfe", "\xff")
	f.Fuzz(func(t *testing.T, msg, key string) {
		got := apierr.SafeMessage(msg, key, "fallback")
		if got == "" {
			t.Fatal("empty message")
		}
		if len(key) >= 8 && strings.Contains(got, key) && !strings.Contains("[redacted]fallback…", key) {
			t.Fatalf("key %q shown in %q", key, got)
		}
		if utf8.ValidString(msg) && !utf8.ValidString(got) {
			t.Fatalf("valid text became invalid: %q", got)
		}
	})
}

func FuzzRetryAfter(f *testing.F) {
	f.Add("20", "")
	f.Add("0.5", "250")
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT", "")
	f.Add("NaN", "Inf")
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		if d := apierr.RetryAfter(h); d < 0 {
			t.Fatalf("RetryAfter(%q, %q) = %v < 0", ra, ms, d)
		}
	})
}

// TestNetworkErrorNamesURL: a provider that cannot be reached is named by
// its URL (without userinfo or query, which may hold a key) and the cause.
func TestNetworkErrorNamesURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // a port nothing listens on: connection refused
	res, reqErr := http.Get("http://user:s3cret@" + addr + "/v1/messages?key=k3y#frag")
	if reqErr == nil {
		_ = res.Body.Close()
		t.Fatal("the request to a closed port succeeded")
	}
	err = apierr.Transport(context.Background(), "anthropic", reqErr, false)
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindNetwork {
		t.Fatalf("Transport = %v, want a network llm.Error", err)
	}
	want := "could not reach the provider at http://" + addr + "/v1/messages: "
	if !strings.HasPrefix(le.Message, want) || !strings.Contains(le.Message, "refused") {
		t.Fatalf("message %q, want it to start %q and give the cause", le.Message, want)
	}
	for _, secret := range []string{"s3cret", "k3y", "user", "frag"} {
		if strings.Contains(le.Message, secret) {
			t.Errorf("message %q holds %q", le.Message, secret)
		}
	}
}
