package fileref

import (
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/protocol"
)

// Part is one piece of a parsed prompt: literal text, or a file token whose
// ref_id was found in file_references.
type Part struct {
	// Text is a text part's literal text, unescaped. It includes unmapped
	// tokens verbatim.
	Text string
	// File is the reference a file part's ref_id names; nil for text. Parts
	// naming the same ref_id share one copy, owned by the Prompt.
	File *protocol.FileReference
	// DisplayPath is a file part's display path as written in its token.
	DisplayPath string
}

// IsFile reports whether p is a file part.
func (p Part) IsFile() bool { return p.File != nil }

// Prompt is a parsed prompt_text: its parts in order, text parts never empty
// and never adjacent.
type Prompt struct {
	Parts []Part
}

// Parse splits prompt_text into text and file parts (§16.2.2 parse order,
// with the parity rule of the package doc). It never fails: whatever is not a
// token with a known ref_id is text.
func Parse(promptText string, refs []protocol.FileReference) Prompt {
	p := parser{s: promptText, gt: -1}
	if len(refs) > 0 {
		p.refs = make(map[string]*protocol.FileReference, len(refs))
		own := append([]protocol.FileReference(nil), refs...) // parts must not alias the caller's slice
		for i := range own {
			if _, dup := p.refs[own[i].RefID]; !dup { // first wins
				p.refs[own[i].RefID] = &own[i]
			}
		}
	}
	// Growing the parts token by token (and the garbage it leaves for the
	// GC) is most of the cost of a token-dense prompt, so size them up
	// front: each "<@file:" may give a file part and the text before it, and
	// a token takes at least 11 bytes. Without refs there is no file part.
	if p.refs != nil {
		if n := min(strings.Count(promptText, tokenPrefix), len(promptText)/len("<@file:x|y>")); n > 0 {
			p.parts = make([]Part, 0, 2*n+1)
		}
	}
	p.run()
	if cap(p.parts) > 2*len(p.parts)+8 {
		p.parts = slices.Clone(p.parts) // most openers were no tokens: give the memory back
	}
	return Prompt{Parts: p.parts}
}

type parser struct {
	s     string
	refs  map[string]*protocol.FileReference
	parts []Part

	// The text part being built is text followed by s[keepFrom:keepTo]. A
	// run of input is only copied into text when a gap (a dropped escape
	// backslash) follows it, so a text part without escapes is a substring
	// of the input, not a copy.
	text             strings.Builder
	keepFrom, keepTo int

	// gt is the index of the first '>' at or after some earlier position, or
	// -1 before the first look; noGT records that no '>' is left at all.
	// Openers without a close would otherwise each scan to the end.
	gt   int
	noGT bool
}

func (p *parser) run() {
	s := p.s
	i := 0
	for i < len(s) {
		switch s[i] {
		case '\\':
			j := i + 1
			for j < len(s) && s[j] == '\\' {
				j++
			}
			// Decoded backslashes and openers are bytes of the input too,
			// so everything is kept from the input: text without escapes
			// stays a substring of it.
			n := j - i
			switch {
			case !strings.HasPrefix(s[j:], tokenOpen):
				p.keep(i, i+n/2+n%2) // an odd run keeps its stray backslash
				i = j
			case n%2 == 1:
				p.keep(i, i+n/2)
				p.keep(j, j+len(tokenOpen)) // escaped opener
				i = j + len(tokenOpen)
			default:
				p.keep(i, i+n/2)
				i = p.opener(j)
			}
		case '<':
			if strings.HasPrefix(s[i:], tokenOpen) {
				i = p.opener(i)
				continue
			}
			p.keep(i, i+1)
			i++
		default:
			j := i + 1
			for j < len(s) && s[j] != '\\' && s[j] != '<' {
				j++
			}
			p.keep(i, j)
			i = j
		}
	}
	p.flush()
}

// opener handles the unescaped "<@" at i and returns where scanning resumes.
func (p *parser) opener(i int) int {
	s := p.s
	if strings.HasPrefix(s[i:], tokenPrefix) {
		idStart := i + len(tokenPrefix)
		idEnd := idStart
		for idEnd < len(s) && isRefIDByte(s[idEnd]) {
			idEnd++
		}
		if idEnd > idStart && idEnd < len(s) && s[idEnd] == refSep {
			disp := idEnd + 1
			if end := p.nextGT(disp); end > disp {
				if r := p.refs[s[idStart:idEnd]]; r != nil {
					p.flush()
					p.parts = append(p.parts, Part{File: r, DisplayPath: s[disp:end]})
				} else {
					p.keep(i, end+1) // unmapped: verbatim
				}
				return end + 1
			}
		}
	}
	// Not a token: the opener is text and scanning goes on right after it.
	p.keep(i, i+len(tokenOpen))
	return i + len(tokenOpen)
}

// nextGT returns the index of the first '>' at or after from, or -1. from
// never decreases between calls, so the cached answer stays right until from
// passes it, and the scans cover disjoint ranges: O(n) in total.
func (p *parser) nextGT(from int) int {
	if p.noGT {
		return -1
	}
	if p.gt >= from {
		return p.gt
	}
	k := strings.IndexByte(p.s[from:], tokenClose)
	if k < 0 {
		p.noGT = true
		return -1
	}
	p.gt = from + k
	return p.gt
}

// keep adds the input s[i:j] to the text part.
func (p *parser) keep(i, j int) {
	if i == j {
		return
	}
	if i != p.keepTo {
		p.text.WriteString(p.s[p.keepFrom:p.keepTo])
		p.keepFrom = i
	}
	p.keepTo = j
}

func (p *parser) flush() {
	t := p.s[p.keepFrom:p.keepTo]
	if p.text.Len() > 0 {
		p.text.WriteString(t)
		t = p.text.String()
		p.text = strings.Builder{}
	}
	p.keepFrom = p.keepTo
	if t != "" {
		p.parts = append(p.parts, Part{Text: t})
	}
}

func isRefIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// Segments gives the prompt back as segments, the form Compose takes: a file
// part becomes a PickedFile built from its reference, with the display path
// its token carried.
func (pr Prompt) Segments() []protocol.PromptSegment {
	if len(pr.Parts) == 0 {
		return nil
	}
	segs := make([]protocol.PromptSegment, len(pr.Parts))
	for i, part := range pr.Parts {
		if !part.IsFile() {
			segs[i] = protocol.PromptSegment{Kind: protocol.SegmentText, Text: part.Text}
			continue
		}
		r := part.File
		var size *int64
		if r.SizeBytes != nil {
			n := *r.SizeBytes
			size = &n
		}
		segs[i] = protocol.PromptSegment{Kind: protocol.SegmentFile, File: &protocol.PickedFile{
			Path:        r.Path,
			DisplayPath: part.DisplayPath,
			WorkspaceID: r.WorkspaceID,
			Name:        r.Name,
			Extension:   r.Extension,
			MimeType:    r.MimeType,
			SizeBytes:   size,
		}}
	}
	return segs
}
