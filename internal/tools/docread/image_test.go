package docread

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
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
