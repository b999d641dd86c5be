// Package redact removes ferry's credentials from text on its way to a log:
// a slog.Handler wrapper for structured logs and an io.Writer wrapper for
// everything else written to a log stream.
//
// Guarantees:
//
//   - Every credential ferry issues has the shape "ferry_<kind>_" followed
//     by unpadded base64url (login, ui and client tokens from
//     internal/auth, download tokens "ferry_dl_…" from internal/master).
//     String replaces each one, whatever its kind, with
//     "ferry_<kind>_[redacted]": the kind stays readable, no character of
//     the secret does. The match is case-insensitive and also takes the
//     percent-encoded forms of "_" and of the secret's characters, as a
//     raw request URI would hold them.
//   - Handler redacts the message, every attribute key, string value,
//     error, byte slice and any other value whose text (as %+v or as JSON)
//     holds a credential, inside groups and in attributes added with With.
//   - Writer redacts each Write on its own; callers write whole lines (as
//     slog handlers and fmt.Fprintf do), so a secret is never split across
//     two writes.
//
// Redaction is by shape, not by a list of known secrets: a secret typed by
// an attacker, a revoked one or one from another master is removed too.
package redact

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// Mark replaces the secret part of a credential.
const Mark = "[redacted]"

// minSecret is the shortest run after the prefix taken for a secret, so
// that identifiers such as "ferry_up_test" in a log stay readable. A real
// secret has 43 characters; a fragment shorter than this gives nothing
// away that matters.
const minSecret = 8

// credential matches "ferry", a separator, a kind, a separator and the
// secret (base64url characters, or percent escapes of anything).
var credential = lazyregexp.New(`(?i)ferry(?:_|%5f)([a-z]+)(?:_|%5f)((?:[a-z0-9_-]|%[0-9a-f]{2}){` + fmt.Sprint(minSecret) + `,})`)

// Contains reports whether s holds a credential.
func Contains(s string) bool {
	// The cheap test first: nearly every log line has no "ferry".
	return containsFold(s, "ferry") && credential.MatchString(s)
}

// String returns s with every credential replaced by its kind and Mark.
func String(s string) string {
	if !containsFold(s, "ferry") {
		return s
	}
	return credential.ReplaceAllStringFunc(s, func(m string) string {
		kind := credential.FindStringSubmatch(m)[1]
		return "ferry_" + strings.ToLower(kind) + "_" + Mark
	})
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// NewWriter returns a writer that redacts each Write before passing it on
// to w.
func NewWriter(w io.Writer) io.Writer { return &writer{w: w} }

type writer struct{ w io.Writer }

func (w *writer) Write(p []byte) (int, error) {
	if !bytes.Contains(bytes.ToLower(p), []byte("ferry")) {
		return w.w.Write(p)
	}
	if _, err := io.WriteString(w.w, String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// NewHandler wraps h so that no record reaches it with a credential.
func NewHandler(h slog.Handler) slog.Handler {
	if r, ok := h.(*handler); ok {
		return r
	}
	return &handler{h: h}
}

type handler struct{ h slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(Attr(a))
		return true
	})
	return h.h.Handle(ctx, nr)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = Attr(a)
	}
	return &handler{h: h.h.WithAttrs(out)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(String(name))}
}

// Attr returns a with every credential in its key and value redacted.
func Attr(a slog.Attr) slog.Attr {
	a.Key = String(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = Attr(ga)
		}
		a.Value = slog.GroupValue(out...)
	case slog.KindAny:
		a.Value = anyValue(v)
	default:
		a.Value = v // numbers, times, durations: nothing to hide
	}
	return a
}

// anyValue redacts a value of any type by its text: the value is kept as
// it is unless a text a handler could print for it holds a credential.
func anyValue(v slog.Value) slog.Value {
	var texts []string
	switch x := v.Any().(type) {
	case error:
		texts = append(texts, x.Error())
	case []byte:
		texts = append(texts, string(x))
	case fmt.Stringer:
		texts = append(texts, x.String())
	case encoding.TextMarshaler:
		if b, err := x.MarshalText(); err == nil {
			texts = append(texts, string(b))
		}
	}
	texts = append(texts, fmt.Sprintf("%+v", v.Any()))
	if b, err := json.Marshal(v.Any()); err == nil {
		texts = append(texts, string(b))
	}
	for _, t := range texts {
		if Contains(t) {
			return slog.StringValue(String(t))
		}
	}
	return v
}
