package tools_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/image/webp"

	"github.com/ferry-dev/ferry/internal/tools"
)

// rdImage is a w×h gradient with a transparent corner.
func rdImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			a := uint8(255)
			if x < w/4 && y < h/4 {
				a = 0
			}
			img.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, a})
		}
	}
	return img
}

func rdPNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func rdJPEG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rdImageResult checks that res is a text block and an image block and
// decodes the image.
func rdImageResult(t *testing.T, res *tools.Result, mediaType string) ([]byte, image.Config) {
	t.Helper()
	if len(res.Blocks) != 2 || res.Blocks[0].Type != "text" || res.Blocks[1].Type != "image" {
		t.Fatalf("blocks %+v", res.Blocks)
	}
	b := res.Blocks[1]
	if b.MediaType != mediaType {
		t.Fatalf("media type %q, want %q", b.MediaType, mediaType)
	}
	data, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("returned image does not decode: %v", err)
	}
	return data, cfg
}

func TestReadImagePNGAsIs(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	data := rdPNG(t, rdImage(40, 20))
	rdWrite(t, dir, "pic.png", data)
	res := rdOK(t, env, map[string]any{"file_path": "pic.png"})
	got, cfg := rdImageResult(t, res, "image/png")
	if !bytes.Equal(got, data) || cfg.Width != 40 || cfg.Height != 20 {
		t.Fatalf("not returned as is: %d×%d", cfg.Width, cfg.Height)
	}
	if text := res.Blocks[0].Text; !strings.Contains(text, "PNG, 40×20 px") {
		t.Fatalf("text %q", text)
	}
	if e := rdEntry(t, env, res); e.Partial || e.View != "image" || e.Hash != tools.HashBytes(data) {
		t.Fatalf("entry %+v", e)
	}
	// Unchanged: a stub the second time.
	if res := rdOK(t, env, map[string]any{"file_path": "pic.png"}); len(res.Blocks) != 1 || !strings.Contains(rdText(res), "unchanged") {
		t.Fatalf("second read %+v", res.Blocks)
	}
}

// Kind is decided by content: a PNG named .txt is an image.
func TestReadImageByContent(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "notes.txt", rdPNG(t, rdImage(8, 8)))
	rdImageResult(t, rdOK(t, env, map[string]any{"file_path": "notes.txt"}), "image/png")
}

func TestReadImageJPEGResized(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxImageDimension = 200
	rdWrite(t, dir, "wide.jpg", rdJPEG(t, rdImage(900, 300)))
	res := rdOK(t, env, map[string]any{"file_path": "wide.jpg"})
	_, cfg := rdImageResult(t, res, "image/jpeg")
	if cfg.Width != 200 || cfg.Height != 67 {
		t.Fatalf("resized to %d×%d, want 200×67", cfg.Width, cfg.Height)
	}
	if text := res.Blocks[0].Text; !strings.Contains(text, "JPEG, 900×300 px; shown resized to 200×67 px") {
		t.Fatalf("text %q", text)
	}
	// Resized is still a full read: the agent saw the whole picture.
	if e := rdEntry(t, env, res); e.Partial {
		t.Fatal("partial")
	}
}

func TestReadImageGIFFirstFrame(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	pal := color.Palette{color.Black, color.White}
	frame := func(c uint8) *image.Paletted {
		p := image.NewPaletted(image.Rect(0, 0, 6, 4), pal)
		for i := range p.Pix {
			p.Pix[i] = c
		}
		return p
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, &gif.GIF{Image: []*image.Paletted{frame(1), frame(0)}, Delay: []int{10, 10}}); err != nil {
		t.Fatal(err)
	}
	rdWrite(t, dir, "anim.gif", b.Bytes())
	res := rdOK(t, env, map[string]any{"file_path": "anim.gif"})
	data, cfg := rdImageResult(t, res, "image/png")
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if r, g, bl, _ := img.At(3, 2).RGBA(); cfg.Width != 6 || r != 0xffff || g != 0xffff || bl != 0xffff {
		t.Fatalf("not the first (white) frame: %d×%d", cfg.Width, cfg.Height)
	}
	if text := res.Blocks[0].Text; !strings.Contains(text, "GIF, 6×4 px (first frame); shown as PNG") {
		t.Fatalf("text %q", text)
	}
}

// testdata/read/*.webp come from golang.org/x/image's test data (BSD).
func TestReadImageWebP(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	for _, name := range []string{"gopher.lossless.webp", "blue-purple-pink.lossy.webp"} {
		data, err := os.ReadFile("testdata/read/" + name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := webp.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		rdWrite(t, dir, "img-"+name+".bin", data) // the name says nothing
		res := rdOK(t, env, map[string]any{"file_path": "img-" + name + ".bin"})
		_, cfg := rdImageResult(t, res, "image/png")
		if cfg.Width != want.Width || cfg.Height != want.Height {
			t.Fatalf("%s: %d×%d, want %d×%d", name, cfg.Width, cfg.Height, want.Width, want.Height)
		}
		if !strings.Contains(res.Blocks[0].Text, "WebP") {
			t.Fatalf("text %q", res.Blocks[0].Text)
		}
	}
}

func TestReadImageCorrupt(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	good := rdPNG(t, rdImage(30, 30))
	rdWrite(t, dir, "trunc.png", good[:len(good)/2])
	rdWrite(t, dir, "junk.png", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 100)...))
	rdWrite(t, dir, "bad.webp", []byte("RIFF\x10\x00\x00\x00WEBPVP8 garbage"))
	rdWrite(t, dir, "bad.jpg", []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 1, 2})
	for _, name := range []string{"trunc.png", "junk.png", "bad.webp", "bad.jpg"} {
		_, err := rdRun(t, env, map[string]any{"file_path": name})
		if msg := rdCode(t, err, tools.CodeEncoding); !strings.Contains(msg, "cannot be decoded") {
			t.Errorf("%s: %q", name, msg)
		}
	}
}

// A PNG whose header claims more pixels than Read decodes is refused before
// decoding.
func TestReadImageTooManyPixels(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	data := rdPNG(t, rdImage(4, 4))
	// IHDR starts at byte 8: length, "IHDR", width, height, …, CRC.
	binary.BigEndian.PutUint32(data[16:], 20000)
	binary.BigEndian.PutUint32(data[20:], 20000)
	binary.BigEndian.PutUint32(data[29:], crc32.ChecksumIEEE(data[12:29]))
	rdWrite(t, dir, "bomb.png", data)
	_, err := rdRun(t, env, map[string]any{"file_path": "bomb.png"})
	if msg := rdCode(t, err, tools.CodeTooLarge); !strings.Contains(msg, "20000×20000") {
		t.Fatalf("message %q", msg)
	}
}

// Noise does not compress: the PNG is re-encoded as JPEG to stay under the
// byte bound.
func TestReadImageByteBound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("encodes a few MB of noise")
	}
	env, dir := rdEnv(t)
	img := image.NewNRGBA(image.Rect(0, 0, 1400, 1400))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	data := rdPNG(t, img)
	if len(data) < 4<<20 {
		t.Fatalf("fixture: noise PNG is only %d bytes", len(data))
	}
	rdWrite(t, dir, "noise.png", data)
	res := rdOK(t, env, map[string]any{"file_path": "noise.png"})
	got, cfg := rdImageResult(t, res, "image/jpeg")
	if len(got) > 3_932_160 || cfg.Width != 1400 {
		t.Fatalf("%d bytes, %d px wide", len(got), cfg.Width)
	}
}

func TestReadImageRefusesOffset(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "p.png", rdPNG(t, rdImage(4, 4)))
	_, err := rdRun(t, env, map[string]any{"file_path": "p.png", "offset": 2})
	rdCode(t, err, tools.CodeInvalidInput)
}
