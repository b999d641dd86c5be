// Package qrterm draws a text (a login URL) as a QR code in a terminal.
//
// It guarantees a code a phone camera reads on dark and light terminals
// alike: the encoder is github.com/skip2/go-qrcode (not ferry's own), the
// four-module quiet zone the standard asks for is kept, and every line sets
// its own colours (dark modules on a bright background) instead of relying
// on the terminal's, so a light-on-dark theme does not invert the code. Two
// rows of modules share one line of text (Unicode half blocks), so a login
// URL fits in about 30 lines.
package qrterm

import (
	"errors"
	"fmt"
	"io"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// ErrTooLong reports a text a QR code cannot hold.
var ErrTooLong = errors.New("text too long for a QR code [qr_too_long]")

// The colours of every line: black modules (the foreground) on bright white
// (the background), then a reset so nothing leaks into what follows.
const (
	sgrOn  = "\x1b[30;107m"
	sgrOff = "\x1b[0m"
)

// The half blocks, by which of the two rows a character covers is dark.
const (
	bothDark   = "█"
	topDark    = "▀"
	bottomDark = "▄"
	noneDark   = " "
)

// Lines returns the QR code of text as terminal lines (without newlines),
// each wrapped in its colours.
func Lines(text string) ([]string, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		// The encoder's only failure is a text over its capacity.
		return nil, fmt.Errorf("%w: %d bytes: %w", ErrTooLong, len(text), err)
	}
	bits := q.Bitmap() // includes the quiet zone
	var lines []string
	for y := 0; y < len(bits); y += 2 {
		var b strings.Builder
		b.WriteString(sgrOn)
		for x := range bits[y] {
			top := bits[y][x]
			bottom := y+1 < len(bits) && bits[y+1][x]
			switch {
			case top && bottom:
				b.WriteString(bothDark)
			case top:
				b.WriteString(topDark)
			case bottom:
				b.WriteString(bottomDark)
			default:
				b.WriteString(noneDark)
			}
		}
		b.WriteString(sgrOff)
		lines = append(lines, b.String())
	}
	return lines, nil
}

// Write writes the QR code of text to w, each line indented by indent.
func Write(w io.Writer, text, indent string) error {
	lines, err := Lines(text)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(indent)
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err = io.WriteString(w, b.String())
	return err
}
