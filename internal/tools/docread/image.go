package docread

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/webp"
)

// Image bounds. Images are told apart by their magic bytes, never by name.
const (
	// MaxImageEncodedBytes bounds a returned image: 3.75 MiB is 5 MiB once
	// base64-encoded, the per-image cap of the Anthropic API.
	MaxImageEncodedBytes = 3_932_160
	// MaxImagePixels bounds what is decoded (50 megapixels: up to 200 MB
	// as RGBA); larger images are refused before decoding.
	MaxImagePixels = 50_000_000
	// MaxImageFileBytes bounds the image file itself.
	MaxImageFileBytes = 256 << 20
	// jpegQuality is used when an image is re-encoded as JPEG.
	jpegQuality = 85
)

// Errors of PrepareImage the caller turns into its own messages.
var (
	// ErrImageFileTooLarge: the file is over MaxImageFileBytes.
	ErrImageFileTooLarge = errors.New("image file too large")
	// ErrImageNotShrinkable: no re-encoding fits MaxImageEncodedBytes.
	ErrImageNotShrinkable = errors.New("image cannot be made small enough")
)

// CorruptImageError is an image that cannot be decoded.
type CorruptImageError struct{ Err error }

func (e *CorruptImageError) Error() string { return "corrupt image: " + e.Err.Error() }
func (e *CorruptImageError) Unwrap() error { return e.Err }

// TooManyPixelsError is an image over MaxImagePixels, refused before
// decoding.
type TooManyPixelsError struct{ W, H int }

func (e *TooManyPixelsError) Error() string {
	return fmt.Sprintf("image of %d×%d px is over %d pixels", e.W, e.H, MaxImagePixels)
}

// ImageFormat names the image format of a file's first bytes ("png",
// "jpeg", "gif" or "webp"), "" if none.
func ImageFormat(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return "jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "webp"
	}
	return ""
}

// PreparedImage is an image ready to return.
type PreparedImage struct {
	Data      []byte
	MediaType string
	// OrigW×OrigH is the source, W×H what is returned.
	OrigW, OrigH, W, H int
	// Reencoded: Data is not the file's bytes.
	Reencoded bool
}

// UpperFormat is a format's display name.
func UpperFormat(format string) string {
	switch format {
	case "jpeg":
		return "JPEG"
	case "gif":
		return "GIF"
	case "webp":
		return "WebP"
	}
	return "PNG"
}

func decodeImageConfig(format string, r io.Reader) (image.Config, error) {
	switch format {
	case "png":
		return png.DecodeConfig(r)
	case "jpeg":
		return jpeg.DecodeConfig(r)
	case "gif":
		return gif.DecodeConfig(r)
	default:
		return webp.DecodeConfig(r)
	}
}

func decodeImage(format string, r io.Reader) (image.Image, error) {
	switch format {
	case "png":
		return png.Decode(r)
	case "jpeg":
		return jpeg.Decode(r)
	case "gif":
		return gif.Decode(r) // the first frame
	default:
		return webp.Decode(r)
	}
}

// PrepareImage decodes the image in r (size bytes, of format), shrinks it
// so its longer side is at most maxDim and re-encodes it until it is at
// most MaxImageEncodedBytes. A PNG or JPEG that needs neither is returned
// as its own bytes (decoded all the same, so a corrupt one is caught here).
// name is only for the messages of read and encode errors. Refusals are
// ErrImageFileTooLarge, *TooManyPixelsError, *CorruptImageError and
// ErrImageNotShrinkable.
//
// A PNG whose ancillary chunks (colour profile, text, EXIF) have a wrong
// checksum is shown without them, as libpng and browsers show it (Go's
// decoder refuses it): such files are common, the pixels are intact.
func PrepareImage(ctx context.Context, name string, r io.ReaderAt, size int64, format string, maxDim int) (*PreparedImage, error) {
	p, err := prepareImage(ctx, name, r, size, format, maxDim)
	var corrupt *CorruptImageError
	var fe png.FormatError
	if format == "png" && errors.As(err, &corrupt) && errors.As(corrupt.Err, &fe) && fe == "invalid checksum" {
		if fixed := repairPNG(r, size); fixed != nil {
			p, err = prepareImage(ctx, name, bytes.NewReader(fixed), int64(len(fixed)), format, maxDim)
			if err == nil {
				p.Reencoded = true // not the file's bytes
			}
		}
	}
	return p, err
}

// repairPNG returns the PNG in r without its ancillary chunks whose CRC is
// wrong, or nil when none is (or a critical chunk's is, or the chunks do
// not parse).
func repairPNG(r io.ReaderAt, size int64) []byte {
	if size > MaxImageFileBytes || size < 8 {
		return nil
	}
	data := make([]byte, size)
	if _, err := r.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	out := append([]byte(nil), data[:8]...)
	dropped := false
	for rest := data[8:]; ; {
		if len(rest) < 12 {
			return nil
		}
		n := binary.BigEndian.Uint32(rest[:4])
		if uint64(n) > uint64(len(rest)-12) {
			return nil
		}
		chunk := rest[:12+n]
		typ := chunk[4:8]
		if crc32.ChecksumIEEE(chunk[4:8+n]) != binary.BigEndian.Uint32(chunk[8+n:]) {
			if typ[0]&0x20 == 0 { // critical: the image itself is damaged
				return nil
			}
			dropped = true
		} else {
			out = append(out, chunk...)
		}
		if string(typ) == "IEND" {
			break
		}
		rest = rest[12+n:]
	}
	if !dropped {
		return nil
	}
	return out
}

func prepareImage(ctx context.Context, name string, r io.ReaderAt, size int64, format string, maxDim int) (*PreparedImage, error) {
	if size > MaxImageFileBytes {
		return nil, ErrImageFileTooLarge
	}
	cfg, err := decodeImageConfig(format, io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, &CorruptImageError{err}
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, &CorruptImageError{fmt.Errorf("no pixels (%d×%d)", cfg.Width, cfg.Height)}
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return nil, &TooManyPixelsError{cfg.Width, cfg.Height}
	}
	img, err := decodeImage(format, bufio.NewReader(io.NewSectionReader(r, 0, size)))
	if err != nil {
		return nil, &CorruptImageError{err}
	}
	b := img.Bounds()
	p := &PreparedImage{OrigW: b.Dx(), OrigH: b.Dy()}
	w, h := fitInside(p.OrigW, p.OrigH, maxDim)
	if w == p.OrigW && h == p.OrigH && (format == "png" || format == "jpeg") && size <= MaxImageEncodedBytes {
		data := make([]byte, size)
		if _, err := r.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		p.Data, p.MediaType, p.W, p.H = data, "image/"+format, w, h
		return p, nil
	}
	// Re-encode: the source's own format for JPEG, PNG for the rest (GIF
	// and WebP are not accepted everywhere). Too big: JPEG, then smaller.
	for range 8 {
		scaled := img
		if w != p.OrigW || h != p.OrigH {
			if scaled, err = Shrink(ctx, img, w, h); err != nil {
				return nil, err
			}
		}
		var data []byte
		mediaType := "image/png"
		if format == "jpeg" {
			data, err = encodeJPEG(scaled)
			mediaType = "image/jpeg"
		} else {
			data, err = encodePNG(scaled)
			if err == nil && len(data) > MaxImageEncodedBytes {
				data, err = encodeJPEG(scaled)
				mediaType = "image/jpeg"
			}
		}
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", name, err)
		}
		if len(data) <= MaxImageEncodedBytes {
			p.Data, p.MediaType, p.W, p.H, p.Reencoded = data, mediaType, w, h, true
			return p, nil
		}
		w, h = max(1, w*3/4), max(1, h*3/4)
	}
	return nil, ErrImageNotShrinkable
}

// fitInside scales w×h down, keeping its aspect, so that neither side
// exceeds maxDim.
func fitInside(w, h, maxDim int) (int, int) {
	if w <= maxDim && h <= maxDim {
		return w, h
	}
	s := float64(maxDim) / float64(max(w, h))
	return max(1, int(math.Round(float64(w)*s))), max(1, int(math.Round(float64(h)*s)))
}

func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeJPEG flattens transparency onto white first: JPEG has no alpha, and
// transparent pixels would otherwise turn black.
func encodeJPEG(img image.Image) ([]byte, error) {
	if o, ok := img.(interface{ Opaque() bool }); !ok || !o.Opaque() {
		flat := image.NewRGBA(img.Bounds())
		draw.Draw(flat, flat.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		draw.Draw(flat, flat.Bounds(), img, img.Bounds().Min, draw.Over)
		img = flat
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Shrink resamples src to w×h (no larger than src) by area averaging: each
// destination pixel is the mean of the source area it covers, the filter
// that does not alias when shrinking. It works a source row at a time, so
// it needs the result, one converted source row and one row of sums — not
// the float buffer of destination width × source height that the kernel
// scalers of golang.org/x/image/draw allocate (192 MB to take a 3000 px
// square to 2000 px).
func Shrink(ctx context.Context, src image.Image, w, h int) (*image.RGBA, error) {
	sb := src.Bounds()
	sw, sh := sb.Dx(), sb.Dy()
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	rx, ry := float64(sw)/float64(w), float64(sh)/float64(h)

	// Each source column covers [x/rx, (x+1)/rx) in destination units: at
	// most two destination columns, with these weights.
	type span struct {
		d      int
		w0, w1 float64
	}
	cols := make([]span, sw)
	for x := range sw {
		x0, x1 := float64(x)/rx, float64(x+1)/rx
		d := min(int(x0), w-1)
		if next := float64(d + 1); next < x1 && d+1 < w {
			cols[x] = span{d, next - x0, x1 - next}
		} else {
			cols[x] = span{d, x1 - x0, 0}
		}
	}
	row := image.NewRGBA(image.Rect(0, 0, sw, 1))
	sums := make([]float64, w*4)
	for y := range h {
		if y%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		clear(sums)
		top, bottom := float64(y)*ry, float64(y+1)*ry
		for sy := int(top); sy < sh && float64(sy) < bottom; sy++ {
			wy := (min(bottom, float64(sy+1)) - max(top, float64(sy))) / ry
			if wy <= 0 {
				continue
			}
			// draw.Draw has fast paths from the decoders' image types
			// (YCbCr, NRGBA, Paletted, Gray) to RGBA.
			draw.Draw(row, row.Bounds(), src, image.Pt(sb.Min.X, sb.Min.Y+sy), draw.Src)
			pix := row.Pix
			for x, c := range cols {
				p := pix[x*4 : x*4+4 : x*4+4]
				s0 := sums[c.d*4 : c.d*4+4 : c.d*4+4]
				f0 := wy * c.w0
				s0[0] += float64(p[0]) * f0
				s0[1] += float64(p[1]) * f0
				s0[2] += float64(p[2]) * f0
				s0[3] += float64(p[3]) * f0
				if c.w1 > 0 {
					s1 := sums[c.d*4+4 : c.d*4+8 : c.d*4+8]
					f1 := wy * c.w1
					s1[0] += float64(p[0]) * f1
					s1[1] += float64(p[1]) * f1
					s1[2] += float64(p[2]) * f1
					s1[3] += float64(p[3]) * f1
				}
			}
		}
		out := dst.Pix[y*dst.Stride : y*dst.Stride+w*4]
		for i, v := range sums {
			out[i] = uint8(min(255, max(0, math.Round(v))))
		}
		// Premultiplied: no channel may exceed alpha, which rounding could
		// otherwise break by one.
		for i := 0; i < len(out); i += 4 {
			a := out[i+3]
			out[i], out[i+1], out[i+2] = min(out[i], a), min(out[i+1], a), min(out[i+2], a)
		}
	}
	return dst, nil
}
