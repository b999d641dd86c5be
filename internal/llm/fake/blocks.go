package fake

import (
	"strings"
)

// Block is one content block of a user message as the server received it,
// the same for both wire formats, so a test can assert that an attached
// image, PDF or text reached the model in the provider's own form.
type Block struct {
	// Type is "text", "image" or "document" (Anthropic's document, or an
	// OpenAI-compatible "file" part); any other type as it was sent.
	Type string
	// Text of a text block, or of a document with a text source.
	Text string
	// MediaType and Data (base64) of an image or document: Anthropic's
	// base64 source, or the data: URL of an OpenAI image_url or file_data.
	MediaType string
	Data      string
	// FileName is an OpenAI file part's filename, an Anthropic document's
	// title.
	FileName string
}

// UserBlocks are the content blocks of the request's user messages, in
// order (a string content is one text block). Tool results are not
// included: they answer tool calls, they are not what the user sent.
func (r Request) UserBlocks() []Block {
	var out []Block
	for _, m := range r.Messages() {
		if role, _ := m["role"].(string); role != "user" {
			continue
		}
		switch c := m["content"].(type) {
		case string:
			out = append(out, Block{Type: "text", Text: c})
		case []any:
			for _, b := range c {
				bm, ok := b.(map[string]any)
				if !ok {
					continue
				}
				if blk, ok := userBlock(bm); ok {
					out = append(out, blk)
				}
			}
		}
	}
	return out
}

// userBlock decodes one block or content part; tool results are left out.
func userBlock(bm map[string]any) (Block, bool) {
	typ, _ := bm["type"].(string)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	switch typ {
	case "tool_result":
		return Block{}, false
	case "text":
		return Block{Type: "text", Text: str(bm, "text")}, true
	case "image":
		src, _ := bm["source"].(map[string]any)
		return Block{Type: "image", MediaType: str(src, "media_type"), Data: str(src, "data")}, true
	case "document":
		src, _ := bm["source"].(map[string]any)
		b := Block{Type: "document", MediaType: str(src, "media_type"), FileName: str(bm, "title")}
		if str(src, "type") == "text" {
			b.Text = str(src, "data")
		} else {
			b.Data = str(src, "data")
		}
		return b, true
	case "image_url":
		iu, _ := bm["image_url"].(map[string]any)
		mt, data := splitDataURL(str(iu, "url"))
		return Block{Type: "image", MediaType: mt, Data: data}, true
	case "file":
		fl, _ := bm["file"].(map[string]any)
		mt, data := splitDataURL(str(fl, "file_data"))
		return Block{Type: "document", MediaType: mt, Data: data, FileName: str(fl, "filename")}, true
	}
	return Block{Type: typ}, true
}

// splitDataURL splits "data:<media type>;base64,<data>"; anything else is
// returned as data with no media type.
func splitDataURL(u string) (mediaType, data string) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", u
	}
	head, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", u
	}
	mediaType, _, _ = strings.Cut(head, ";")
	return mediaType, data
}
