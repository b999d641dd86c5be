package docread

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"
)

// Area averaging: blocks shrink to their colours exactly, a uniform image
// stays uniform at a ratio that is not whole, and transparency survives.
func TestReadShrink(t *testing.T) {
	t.Parallel()
	src := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	colours := [2][2]color.NRGBA{{{255, 0, 0, 255}, {0, 255, 0, 255}}, {{0, 0, 255, 255}, {0, 0, 0, 0}}}
	for y := range 4 {
		for x := range 4 {
			src.SetNRGBA(x, y, colours[y/2][x/2])
		}
	}
	dst, err := Shrink(context.Background(), src, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for y := range 2 {
		for x := range 2 {
			want := color.RGBAModel.Convert(colours[y][x]).(color.RGBA)
			if got := dst.RGBAAt(x, y); got != want {
				t.Errorf("pixel %d,%d = %v, want %v", x, y, got, want)
			}
		}
	}

	uni := image.NewRGBA(image.Rect(0, 0, 300, 170))
	for i := range uni.Pix {
		uni.Pix[i] = []uint8{10, 200, 77, 255}[i%4]
	}
	dst, err = Shrink(context.Background(), uni, 200, 113)
	if err != nil {
		t.Fatal(err)
	}
	for y := range 113 {
		for x := range 200 {
			if got := dst.RGBAAt(x, y); got != (color.RGBA{10, 200, 77, 255}) {
				t.Fatalf("pixel %d,%d = %v", x, y, got)
			}
		}
	}

	// A half-covered pixel averages: black and white columns make grey.
	stripes := image.NewGray(image.Rect(0, 0, 4, 1))
	stripes.Pix = []uint8{0, 255, 0, 255}
	dst, err = Shrink(context.Background(), stripes, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := dst.RGBAAt(0, 0); got.R < 127 || got.R > 128 {
		t.Errorf("stripes averaged to %v", got)
	}
}

func TestReadFitInside(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ w, h, max, ww, wh int }{
		{100, 50, 200, 100, 50},
		{4000, 3000, 2000, 2000, 1500},
		{3000, 4000, 2000, 1500, 2000},
		{10000, 1, 2000, 2000, 1},
	} {
		if w, h := fitInside(c.w, c.h, c.max); w != c.ww || h != c.wh {
			t.Errorf("fitInside(%d, %d, %d) = %d×%d", c.w, c.h, c.max, w, h)
		}
	}
}

// The refusals are typed, so the caller can word them; none decodes first.
func TestPrepareImageRefusals(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	if f := ImageFormat(png); f != "png" {
		t.Fatalf("ImageFormat = %q", f)
	}
	if f := ImageFormat([]byte("plain text")); f != "" {
		t.Fatalf("ImageFormat of text = %q", f)
	}
	r := bytes.NewReader(png)
	_, err := PrepareImage(context.Background(), "x", r, MaxImageFileBytes+1, "png", 2000)
	if !errors.Is(err, ErrImageFileTooLarge) {
		t.Fatalf("oversized file: %v", err)
	}
	_, err = PrepareImage(context.Background(), "x", r, int64(len(png)), "png", 2000)
	var corrupt *CorruptImageError
	if !errors.As(err, &corrupt) || corrupt.Err == nil {
		t.Fatalf("corrupt image: %v", err)
	}
}

// A PNG whose ancillary chunk has a wrong CRC (the MCP reference server's
// logo has such an iCCP chunk) is shown without that chunk, as libpng
// shows it; a wrong CRC on the pixel data is still a corrupt image.
func TestPrepareImageBadAncillaryCRC(t *testing.T) {
	t.Parallel()
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	good := b.Bytes()
	// After the signature (8) and IHDR (25): a tEXt chunk with a bad CRC.
	text := []byte{0, 0, 0, 5, 't', 'E', 'X', 't', 'a', 0, 'b', 'c', 'd', 1, 2, 3, 4}
	bad := append(append(append([]byte(nil), good[:33]...), text...), good[33:]...)
	p, err := PrepareImage(context.Background(), "x.png", bytes.NewReader(bad), int64(len(bad)), "png", 2000)
	if err != nil {
		t.Fatalf("bad ancillary CRC: %v", err)
	}
	if !bytes.Equal(p.Data, good) || p.W != 3 || p.H != 2 || !p.Reencoded {
		t.Errorf("got %d bytes %d×%d (reencoded %v), want the PNG without the chunk", len(p.Data), p.W, p.H, p.Reencoded)
	}
	// The IDAT's CRC broken: refused.
	broken := append([]byte(nil), good...)
	broken[len(broken)-12-1]++ // the last byte of IDAT's CRC, before IEND
	_, err = PrepareImage(context.Background(), "y.png", bytes.NewReader(broken), int64(len(broken)), "png", 2000)
	var corrupt *CorruptImageError
	if !errors.As(err, &corrupt) {
		t.Fatalf("bad IDAT CRC: %v", err)
	}
}
