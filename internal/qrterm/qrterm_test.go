package qrterm_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/qrterm"
	"github.com/ferry-dev/ferry/internal/qrterm/qrtermtest"
)

// TestQRDecodesToTheURL draws login URLs as a terminal would show them and
// reads them back with an independent decoder.
func TestQRDecodesToTheURL(t *testing.T) {
	for _, url := range []string{
		"http://127.0.0.1:8080/login?token=abc",
		"https://laptop.tail1234.ts.net/login?token=" + strings.Repeat("Zz9_-", 9),
		"https://ferry.example.org:8443/login?token=" + strings.Repeat("x", 200),
	} {
		var out bytes.Buffer
		out.WriteString("Open this URL:\n\n    " + url + "\n\n")
		if err := qrterm.Write(&out, url, "    "); err != nil {
			t.Fatalf("Write(%q): %v", url, err)
		}
		out.WriteString("\nafter\n")
		got, err := qrtermtest.Decode(out.String())
		if err != nil {
			t.Fatalf("decode %q: %v\n%s", url, err, out.String())
		}
		if got != url {
			t.Errorf("decoded %q, want %q", got, url)
		}
	}
}

// TestQRShape checks what makes a code readable on any terminal: two module
// rows a line, a quiet zone of four modules on every side, and colours set
// and reset on each line.
func TestQRShape(t *testing.T) {
	lines, err := qrterm.Lines("https://example.org/login?token=t")
	if err != nil {
		t.Fatal(err)
	}
	width := -1
	for i, l := range lines {
		if !strings.HasPrefix(l, "\x1b[30;107m") || !strings.HasSuffix(l, "\x1b[0m") {
			t.Fatalf("line %d does not set and reset its colours: %q", i, l)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(l, "\x1b[30;107m"), "\x1b[0m")
		n := utf8.RuneCountInString(body)
		if width >= 0 && n != width {
			t.Fatalf("line %d is %d wide, line 0 %d", i, n, width)
		}
		width = n
		if !strings.HasPrefix(body, "    ") || !strings.HasSuffix(body, "    ") {
			t.Errorf("line %d lacks the side quiet zone: %q", i, body)
		}
	}
	// Four light modules top and bottom: two whole blank lines each side.
	blank := strings.Repeat(" ", width)
	for _, i := range []int{0, 1, len(lines) - 2} {
		if !strings.Contains(lines[i], blank) {
			t.Errorf("line %d is not quiet: %q", i, lines[i])
		}
	}
	// Modules (21+4k) plus 8 quiet: an odd count, so the last line's bottom
	// half is the quiet zone and must be light ("▀" or " ", never "▄"/"█").
	last := lines[len(lines)-1]
	if strings.ContainsAny(last, "▄█") {
		t.Errorf("last line draws below the code: %q", last)
	}
	if width != 2*len(lines)-1 {
		t.Errorf("%d lines for %d modules: want two rows a line", len(lines), width)
	}
}

func TestQRTooLong(t *testing.T) {
	_, err := qrterm.Lines(strings.Repeat("x", 5000))
	if !errors.Is(err, qrterm.ErrTooLong) {
		t.Fatalf("err = %v, want ErrTooLong", err)
	}
}
