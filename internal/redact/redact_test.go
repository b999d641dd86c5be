package redact_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/redact"
)

// secret returns a credential of kind with the shape ferry issues.
func secret(t testing.TB, kind string) string {
	t.Helper()
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatal(err)
	}
	return "ferry_" + kind + "_" + base64.RawURLEncoding.EncodeToString(raw[:])
}

// body is the secret part of a credential: none of it may survive.
func body(s string) string { return s[len(s)-43:] }

func TestString(t *testing.T) {
	dl := secret(t, "dl")
	ui := secret(t, "ui")
	for _, c := range []struct{ in, want string }{
		{"GET /v1/artifacts/" + dl, "GET /v1/artifacts/ferry_dl_[redacted]"},
		{"path=/login?token=" + ui + "&x=1", "path=/login?token=ferry_ui_[redacted]&x=1"},
		{`Authorization: Bearer ` + ui + `, "` + dl + `"`, `Authorization: Bearer ferry_ui_[redacted], "ferry_dl_[redacted]"`},
		{"ferry%5Fdl%5F" + dl[len("ferry_dl_"):], "ferry_dl_[redacted]"},
		{"FERRY_UI_" + body(ui), "ferry_ui_[redacted]"},
		{"ferry_dl_" + url.PathEscape("abc%def") + "xxxxxxxx tail", "ferry_dl_[redacted] tail"},
		// Not credentials: kept.
		{"ferry_session=; ferry_up_test ferry is up", "ferry_session=; ferry_up_test ferry is up"},
		{"no ferry here at all", "no ferry here at all"},
	} {
		if got := redact.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
		if redact.String(c.want) != c.want {
			t.Errorf("String is not idempotent on %q", c.want)
		}
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return "<" + s.s + ">" }

type textual struct{ s string }

func (t textual) MarshalText() ([]byte, error) { return []byte(t.s), nil }

type payload struct {
	Name  string          `json:"name"`
	Inner *payload        `json:"inner,omitempty"`
	Raw   json.RawMessage `json:"raw,omitempty"`
}

type valuer struct{ s string }

func (v valuer) LogValue() slog.Value { return slog.StringValue(v.s) }

// TestHandler logs a credential in every place a record can hold one and
// finds none of it in the text or JSON output.
func TestHandler(t *testing.T) {
	dl, ui, cl, lg := secret(t, "dl"), secret(t, "ui"), secret(t, "client"), secret(t, "login")
	secrets := []string{dl, ui, cl, lg}
	for name, mk := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
		"json": func(b *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})
		},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			log := slog.New(redact.NewHandler(mk(&b)))
			log = log.With("conn", "c1", "token", cl).WithGroup("req-" + lg)
			log.Debug("refused "+dl,
				"path", "/v1/artifacts/"+dl,
				"err", fmt.Errorf("dial: %w", errors.New("bad "+ui)),
				"raw", []byte(`{"t":"`+lg+`"}`),
				"stringer", stringer{cl},
				"text", textual{dl},
				"nested", &payload{Name: "a", Inner: &payload{Name: ui}},
				"rawjson", json.RawMessage(`"`+cl+`"`),
				"valuer", valuer{lg},
				slog.Group("g", "k", ui, slog.Group("h", "deep", dl)),
				ui, "a key that is a secret",
				"count", 3,
			)
			out := b.String()
			for _, s := range secrets {
				if strings.Contains(out, body(s)) {
					t.Errorf("secret %s… survived: %s", s[:12], out)
				}
			}
			for _, want := range []string{"ferry_dl_[redacted]", "ferry_ui_[redacted]", "ferry_client_[redacted]", "ferry_login_[redacted]", "count", "c1"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q: %s", want, out)
				}
			}
		})
	}
	if h := redact.NewHandler(slog.DiscardHandler); redact.NewHandler(h) != h {
		t.Error("wrapping twice redacts twice")
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := redact.NewWriter(&b)
	dl := secret(t, "dl")
	line := "ferry up: download " + dl + " refused\n"
	n, err := fmt.Fprint(w, line)
	if err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v; want %d", n, err, len(line))
	}
	if got := b.String(); got != "ferry up: download ferry_dl_[redacted] refused\n" {
		t.Fatalf("got %q", got)
	}
}

// FuzzString: a credential of any kind embedded anywhere in any text, raw
// or with its underscores percent-encoded, never survives String.
func FuzzString(f *testing.F) {
	f.Add("GET /v1/artifacts/", " HTTP/1.1", []byte{0}, uint8(0), false)
	f.Add("token=", "&next=/", []byte("0123456789abcdef0123456789abcdef"), uint8(1), true)
	f.Add("ferry_", "ferry_ui_", []byte{0xff, 0xfe}, uint8(2), false)
	f.Add("", "", []byte{}, uint8(3), false)
	f.Add("xferry_client", "___---", []byte("\x00\x01"), uint8(2), true)
	f.Fuzz(func(t *testing.T, before, after string, seed []byte, kind uint8, encoded bool) {
		var raw [32]byte
		copy(raw[:], seed)
		enc := base64.RawURLEncoding.EncodeToString(raw[:])
		k := []string{"login", "ui", "client", "dl"}[kind%4]
		cred := "ferry_" + k + "_" + enc
		in, sec := before+cred+after, enc
		if encoded {
			sec = strings.ReplaceAll(enc, "_", "%5F")
			in = before + strings.ReplaceAll(cred, "_", "%5F") + after
		}
		out := redact.String(in)
		// The text around the credential may hold the secret's characters
		// by chance (all zeros encode as "AAA…"): only more copies than
		// it had mean the secret itself survived.
		if strings.Count(out, sec) > strings.Count(before, sec)+strings.Count(after, sec) {
			t.Fatalf("secret survived: String(%q) = %q", in, out)
		}
		if redact.Contains(out) {
			t.Fatalf("String(%q) = %q still holds a credential", in, out)
		}
		if !redact.Contains(in) {
			t.Fatalf("Contains(%q) = false", in)
		}
	})
}
