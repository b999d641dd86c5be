package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The capture's pieces, fed byte by byte so every split point occurs.

func TestCaptureProgressNeverSplitsUTF8(t *testing.T) {
	t.Parallel()
	// Invalid bytes pass through unchanged; the deltas add up to the input.
	text := strings.Repeat("aé€😀\n", 50) + "\xff\xfe tail" + "é" + "\xe2\x82"
	var got strings.Builder
	c := newCapture(1000, func(d string) {
		if d == "" {
			t.Error("empty delta")
		}
		got.WriteString(d)
	})
	for i := range len(text) {
		c.write([]byte{text[i]})
		if len(c.carry) > 3 {
			t.Fatalf("carry grew to %d bytes", len(c.carry))
		}
	}
	c.readFrom(strings.NewReader("")) // flushes the carry
	if got.String() != text {
		t.Fatalf("deltas %q, want %q", got.String(), text)
	}
	valid := strings.Repeat("é€😀", 40)
	got.Reset()
	c = newCapture(100, func(d string) {
		if !utf8.ValidString(d) {
			t.Fatalf("delta %q splits a character", d)
		}
		got.WriteString(d)
	})
	for i := range len(valid) {
		c.write([]byte{valid[i]})
	}
	c.readFrom(strings.NewReader(""))
	if got.String() != valid {
		t.Fatal("deltas do not add up")
	}
	if s := c.String(); !utf8.ValidString(s) || !strings.Contains(s, "elided") {
		t.Fatalf("capped output %q", s)
	}
}

func TestCaptureHeadAndTail(t *testing.T) {
	t.Parallel()
	c := newCapture(10, nil)
	c.write([]byte("0123"))
	c.write([]byte("4567"))
	if c.String() != "01234567" {
		t.Fatalf("under the cap: %q", c.String())
	}
	c.write([]byte("89ab"))
	c.write([]byte(strings.Repeat("x", 100)))
	c.write([]byte("WXYZ"))
	s := c.String()
	if !strings.HasPrefix(s, "01234\n") || !strings.HasSuffix(s, "\nxWXYZ") || !strings.Contains(s, "[106 bytes of output elided: it was 116 bytes") {
		t.Fatalf("capped: %q", s)
	}
	if len(c.tail) > 2*c.tailCap {
		t.Fatalf("tail buffer %d bytes, cap %d", len(c.tail), c.tailCap)
	}
	// Exactly at the cap nothing is elided.
	c = newCapture(10, nil)
	c.write([]byte("0123456789"))
	if c.String() != "0123456789" {
		t.Fatalf("at the cap: %q", c.String())
	}
}

func TestBashEnviron(t *testing.T) {
	t.Parallel()
	got := bashEnviron([]string{"PATH=/bin", "ANTHROPIC_API_KEY=x", "OPENAI_API_KEY=y", "ANTHROPIC_API_KEY_FILE=kept", "FERRY_TOKEN=z", "A=B=C"})
	want := "PATH=/bin ANTHROPIC_API_KEY_FILE=kept A=B=C GIT_TERMINAL_PROMPT=0 GIT_EDITOR=true"
	if strings.Join(got, " ") != want {
		t.Fatalf("bashEnviron = %q", got)
	}
}

func TestCaptureSurvivesPanickingHook(t *testing.T) {
	t.Parallel()
	calls := 0
	c := newCapture(100, func(string) { calls++; panic("hook bug") })
	c.write([]byte("one "))
	c.write([]byte("two"))
	if calls != 1 || c.String() != "one two" {
		t.Fatalf("calls %d, output %q", calls, c.String())
	}
}
