package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/tools"
)

// maxImages is the most images one result passes to the model; Read's
// PDF pages are bounded alike.
const maxImages = 10

// maxURI cuts a URI quoted in a result's text.
const maxURI = 2 << 10

// convert turns a call's result into what the model sees: every text (and
// the text of resources) joined in order into one text block cut to Read's
// token gate, then the images, prepared as Read prepares an image file.
// An isError result is a *tools.Error (CodeMCP) with the text.
func convert(ctx context.Context, env *tools.Env, server, tool string, res *mcp.CallToolResult) (*tools.Result, error) {
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	var (
		texts     []string
		images    []tools.Block
		nImages   int
		leftOut   int
		imgFailed error
	)
	image := func(what string, data []byte) {
		if nImages >= maxImages {
			leftOut++
			return
		}
		blocks, err := tools.ImageBlocks(ctx, env, what, data)
		if err != nil {
			if ctx.Err() != nil {
				imgFailed = ctx.Err()
				return
			}
			texts = append(texts, fmt.Sprintf("[%s could not be shown: %s]", what, tools.AgentMessage(err)))
			return
		}
		nImages++
		images = append(images, blocks...)
	}
	for i, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			image(fmt.Sprintf("image %d of the result (%s)", i+1, mediaType(c.MIMEType)), c.Data)
		case *mcp.AudioContent:
			texts = append(texts, fmt.Sprintf("[audio (%s, %d bytes) not shown: ferry passes no audio to the model]", mediaType(c.MIMEType), len(c.Data)))
		case *mcp.ResourceLink:
			texts = append(texts, linkText(c))
		case *mcp.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				texts = append(texts, "[an embedded resource without contents]")
			case len(r.Blob) > 0 && r.Text == "":
				if strings.HasPrefix(r.MIMEType, "image/") {
					image("resource "+runecut.Ellipsis(r.URI, maxURI), r.Blob)
					continue
				}
				texts = append(texts, fmt.Sprintf("[resource %s (%s): %d bytes of binary data, not shown]", runecut.Ellipsis(r.URI, maxURI), mediaType(r.MIMEType), len(r.Blob)))
			default:
				texts = append(texts, fmt.Sprintf("[resource %s (%s)]\n%s", runecut.Ellipsis(r.URI, maxURI), mediaType(r.MIMEType), r.Text))
			}
		default:
			texts = append(texts, fmt.Sprintf("[content of type %T not shown]", c))
		}
	}
	if imgFailed != nil {
		return nil, imgFailed
	}
	if len(texts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			texts = append(texts, string(b))
		}
	}
	if leftOut > 0 {
		texts = append(texts, fmt.Sprintf("[%d more images not shown: at most %d pass in one result]", leftOut, maxImages))
	}
	text, err := capText(ctx, env, strings.Join(texts, "\n"))
	if err != nil {
		return nil, err
	}
	if res.IsError {
		if text == "" {
			text = "(no message)"
		}
		return nil, tools.Errorf(tools.CodeMCP, "MCP tool %s on server %s reported an error: %s", tool, server, text)
	}
	var blocks []tools.Block
	if text != "" {
		blocks = tools.Text(text)
	}
	blocks = append(blocks, images...)
	if len(blocks) == 0 {
		blocks = tools.Text("(no output)")
	}
	return &tools.Result{Blocks: blocks}, nil
}

// capText cuts text to Read's token gate, with a note saying what was cut.
func capText(ctx context.Context, env *tools.Env, text string) (string, error) {
	kept, cut, err := tools.CapText(ctx, env, text)
	if err != nil || !cut {
		return kept, err
	}
	return kept + fmt.Sprintf("\n\n[ferry cut this result: the tool returned %d bytes of text, over the token limit of one tool result; the first %d bytes are shown above, the remaining %d were dropped.]",
		len(text), len(kept), len(text)-len(kept)), nil
}

// linkText names a resource link for the model.
func linkText(l *mcp.ResourceLink) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[resource link %s", runecut.Ellipsis(l.URI, maxURI))
	var about []string
	for _, s := range []string{l.Name, l.Title, l.MIMEType} {
		if s != "" {
			about = append(about, runecut.Ellipsis(s, maxURI))
		}
	}
	if l.Size != nil {
		about = append(about, fmt.Sprintf("%d bytes", *l.Size))
	}
	if len(about) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(about, ", "))
	}
	if l.Description != "" {
		fmt.Fprintf(&b, ": %s", runecut.Ellipsis(l.Description, maxURI))
	}
	b.WriteString("]")
	return b.String()
}

func mediaType(m string) string {
	if m == "" {
		return "no media type"
	}
	return runecut.Ellipsis(m, 200)
}
