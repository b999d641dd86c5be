// Package qrtermtest reads back the QR codes qrterm draws, for tests: it
// finds the block of half-block lines in a terminal's output, rebuilds the
// image and decodes it with an independent decoder (gozxing, a port of
// ZXing), so a test checks what a phone camera would read.
package qrtermtest

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"regexp"
	"strings"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// sgr matches the colour sequences qrterm wraps its lines in.
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// scale is the pixels per module of the rebuilt image.
const scale = 4

// Decode finds the first QR code drawn in out and returns the text it
// encodes.
func Decode(out string) (string, error) {
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSuffix(line, "\r") // a terminal's line ending
		start := strings.Index(line, "\x1b[")
		if start < 0 {
			if rows != nil {
				break // the code ended
			}
			continue
		}
		// Drop the indent before the colours, keep the quiet zone after.
		rows = append(rows, sgr.ReplaceAllString(line[start:], ""))
	}
	if rows == nil {
		return "", errors.New("no QR code in the output")
	}
	// A margin beyond the drawn quiet zone, so a code drawn without one
	// would be caught by the caller's own checks, not by this decoder.
	const margin = 0
	width := 0
	for _, r := range rows {
		width = max(width, len([]rune(r)))
	}
	img := image.NewGray(image.Rect(0, 0, (width+2*margin)*scale, (len(rows)*2+2*margin)*scale))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	dark := func(x, y int) {
		for dy := range scale {
			for dx := range scale {
				img.SetGray((x+margin)*scale+dx, (y+margin)*scale+dy, color.Gray{})
			}
		}
	}
	for y, r := range rows {
		for x, c := range []rune(r) {
			switch c {
			case '█':
				dark(x, 2*y)
				dark(x, 2*y+1)
			case '▀':
				dark(x, 2*y)
			case '▄':
				dark(x, 2*y+1)
			case ' ':
			default:
				return "", fmt.Errorf("unexpected character %q in QR line %d", c, y)
			}
		}
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		return "", fmt.Errorf("bitmap: %w", err)
	}
	// The image is drawn, not photographed: PURE_BARCODE reads the modules
	// straight off the grid instead of hunting for finder patterns, a
	// camera heuristic that misjudges about one drawn code in 200 (a data
	// area that mimics a finder's 1:1:3:1:1 run).
	hints := map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, hints)
	if err != nil {
		return "", fmt.Errorf("decode: %w", err)
	}
	return res.GetText(), nil
}
