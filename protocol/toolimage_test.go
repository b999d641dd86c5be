package protocol_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestToolImagesRefused: agent.tool.finished's images are checked by the
// decoder, each refusal coded and naming the field.
func TestToolImagesRefused(t *testing.T) {
	t.Parallel()
	img := func(mt, data string) map[string]any { return map[string]any{"media_type": mt, "data": data} }
	five := []any{}
	for range 5 {
		five = append(five, img("image/png", onePixelPNG))
	}
	big := base64.StdEncoding.EncodeToString(make([]byte, protocol.MaxToolImageBytes)) // over 1 MiB once encoded
	cases := []struct {
		name   string
		images []any
		code   string
		field  string
	}{
		{"five images", five, protocol.CodeInvalidValue, "payload.images"},
		{"svg", []any{img("image/svg+xml", onePixelPNG)}, protocol.CodeInvalidValue, "payload.images[0].media_type"},
		{"no data", []any{img("image/png", "")}, protocol.CodeInvalidValue, "payload.images[0].data"},
		{"not base64", []any{img("image/png", onePixelPNG), img("image/gif", "***")}, protocol.CodeInvalidValue, "payload.images[1].data"},
		{"too large", []any{img("image/webp", big)}, protocol.CodeInvalidValue, "payload.images[0].data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw := mutate(t, "agent.tool.finished", func(_, p map[string]any) { p["images"] = c.images })
			_, err := protocol.Decode(raw)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != c.code || pe.Field != c.field {
				t.Fatalf("Decode = %v, want %s on %s", err, c.code, c.field)
			}
		})
	}
	raw := mutate(t, "agent.tool.finished", func(_, p map[string]any) { p["images"] = []any{img("image/jpeg", onePixelPNG)} })
	if _, err := protocol.Decode(raw); err != nil {
		t.Fatalf("a valid image is refused: %v", err)
	}
}

// TestAppendToolImage: what an adapter may put in an event, and what it
// leaves out.
func TestAppendToolImage(t *testing.T) {
	t.Parallel()
	var imgs []protocol.ToolImage
	var ok bool
	if imgs, ok = protocol.AppendToolImage(imgs, "image/png", onePixelPNG); !ok || len(imgs) != 1 {
		t.Fatalf("a small PNG is left out")
	}
	for _, bad := range []struct{ mt, data string }{
		{"image/svg+xml", onePixelPNG},
		{"image/png", "%%%"},
		{"image/png", strings.Repeat("A", protocol.MaxToolImageBytes+4)},
	} {
		if got, ok := protocol.AppendToolImage(imgs, bad.mt, bad.data); ok || len(got) != 1 {
			t.Errorf("AppendToolImage(%s, %d bytes) took it", bad.mt, len(bad.data))
		}
	}
	mib := strings.Repeat("A", protocol.MaxToolImageBytes)
	imgs = nil
	for range 3 {
		imgs, _ = protocol.AppendToolImage(imgs, "image/png", mib)
	}
	if _, ok := protocol.AppendToolImage(imgs, "image/png", onePixelPNG); ok {
		t.Errorf("a fourth image past %d bytes together was taken", protocol.MaxToolImagesBytes)
	}
	imgs = nil
	for range 4 {
		imgs, _ = protocol.AppendToolImage(imgs, "image/png", onePixelPNG)
	}
	if _, ok := protocol.AppendToolImage(imgs, "image/png", onePixelPNG); ok || len(imgs) != 4 {
		t.Errorf("a fifth image was taken")
	}
}
