package tools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/ferry-dev/ferry/internal/tools/docread"
)

// Images are decoded, shrunk and re-encoded by docread; this file turns
// its refusals into the agent's messages and builds the result.

// imageFormat names the image format of a file's first bytes, "" if none.
func imageFormat(head []byte) string { return docread.ImageFormat(head) }

// describeImage is the text that goes with the image block.
func describeImage(p *docread.PreparedImage, name, format string) string {
	what := fmt.Sprintf("%s, %d×%d px", docread.UpperFormat(format), p.OrigW, p.OrigH)
	if format == "gif" {
		what += " (first frame)"
	}
	size := formatBytes(int64(len(p.Data)))
	switch {
	case p.W != p.OrigW || p.H != p.OrigH:
		return fmt.Sprintf("Image %s: %s; shown resized to %d×%d px (%s, %s).", name, what, p.W, p.H, mediaName(p.MediaType), size)
	case p.Reencoded:
		return fmt.Sprintf("Image %s: %s; shown as %s (%s).", name, what, mediaName(p.MediaType), size)
	}
	return fmt.Sprintf("Image %s: %s (%s).", name, what, size)
}

func mediaName(mediaType string) string {
	if mediaType == "image/jpeg" {
		return "JPEG"
	}
	return "PNG"
}

// prepareImage is docread.PrepareImage with its refusals as *Error.
func prepareImage(ctx context.Context, name string, r io.ReaderAt, size int64, format string, maxDim int) (*docread.PreparedImage, error) {
	p, err := docread.PrepareImage(ctx, name, r, size, format, maxDim)
	if err == nil {
		return p, nil
	}
	var corrupt *docread.CorruptImageError
	var pixels *docread.TooManyPixelsError
	switch {
	case errors.As(err, &corrupt):
		return nil, &Error{Code: CodeEncoding, Err: corrupt.Err, Message: fmt.Sprintf(
			"%s looks like a %s image but cannot be decoded (%v); it may be corrupt or truncated.", name, docread.UpperFormat(format), corrupt.Err)}
	case errors.Is(err, docread.ErrImageFileTooLarge):
		return nil, Errorf(CodeTooLarge, "%s is a %s image of %s, over the %s Read decodes; shrink it with an image tool first.",
			name, docread.UpperFormat(format), formatBytes(size), formatBytes(docread.MaxImageFileBytes))
	case errors.As(err, &pixels):
		return nil, Errorf(CodeTooLarge, "%s is %d×%d px, over the %d megapixels Read decodes; shrink it with an image tool first.",
			name, pixels.W, pixels.H, docread.MaxImagePixels/1_000_000)
	case errors.Is(err, docread.ErrImageNotShrinkable):
		return nil, Errorf(CodeTooLarge, "%s could not be made smaller than %s as an image; shrink it with an image tool first.", name, formatBytes(docread.MaxImageEncodedBytes))
	}
	return nil, err
}

// image reads an image file.
func (rc *readCall) image(format string) (*Result, error) {
	const view = "image"
	if stub := rc.dedup(view); stub != nil {
		return stub, nil
	}
	p, err := prepareImage(rc.ctx, rc.name, rc.f, rc.info.Stamp.Size, format, rc.limits.MaxImageDimension)
	if err != nil {
		return nil, err
	}
	hash, err := rc.hashFile()
	if err != nil {
		return nil, err
	}
	// The agent saw the whole picture: a full read, even when resized.
	rc.record(view, false, hash)
	return rc.result([]Block{
		{Type: "text", Text: describeImage(p, rc.name, format)},
		{Type: "image", MediaType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)},
	}), nil
}
