package lsp

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"github.com/ferry-dev/ferry/internal/runecut"
)

// maxMessageRunes cuts one diagnostic's message: a server may explain at
// length, the model needs the gist and the position.
const maxMessageRunes = 300

// format is the text for the model of the diagnostics d of the file rel
// (content as sent), as the package doc describes.
func format(server, rel string, content []byte, d []protocol.Diagnostic, severity string, maxLines int) string {
	if maxLines <= 0 {
		maxLines = DefaultMaxLines
	}
	least := protocol.DiagnosticSeverityError
	if severity == SeverityWarning {
		least = protocol.DiagnosticSeverityWarning
	}
	var kept []protocol.Diagnostic
	errs, warns := 0, 0
	for _, x := range d {
		// No severity: the client decides (LSP); an error is the safe reading.
		if x.Severity == 0 || x.Severity == protocol.DiagnosticSeverityError {
			errs++
		} else if x.Severity <= least {
			warns++
		} else {
			continue
		}
		kept = append(kept, x)
	}
	if len(kept) == 0 {
		return ""
	}
	slices.SortStableFunc(kept, func(a, b protocol.Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Range.Start.Line, b.Range.Start.Line), cmp.Compare(a.Range.Start.Character, b.Range.Start.Character))
	})
	lines := bytes.Split(content, []byte("\n"))
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s reports %s in %s after this change:\n", server, counts(errs, warns), rel)
	for i, x := range kept {
		if i == maxLines {
			fmt.Fprintf(&sb, "… and %d more\n", len(kept)-maxLines)
			break
		}
		line := int(x.Range.Start.Line)
		col := 1
		if line < len(lines) {
			col = byteColumn(lines[line], x.Range.Start.Character)
		}
		kind := ""
		if x.Severity != 0 && x.Severity != protocol.DiagnosticSeverityError {
			kind = "warning: "
		}
		msg := strings.Join(strings.Fields(x.Message), " ")
		fmt.Fprintf(&sb, "%s:%d:%d: %s%s\n", rel, line+1, col, kind, runecut.Ellipsis(msg, maxMessageRunes))
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

func counts(errs, warns int) string {
	plural := func(n int, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	switch {
	case warns == 0:
		return plural(errs, "error")
	case errs == 0:
		return plural(warns, "warning")
	}
	return plural(errs, "error") + " and " + plural(warns, "warning")
}

// byteColumn turns an LSP character offset (UTF-16 code units) in line
// into a byte column from 1, as Go's tools print them.
func byteColumn(line []byte, utf16 uint32) int {
	units := uint32(0)
	i := 0
	for i < len(line) && units < utf16 {
		r, size := utf8.DecodeRune(line[i:])
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	return i + 1
}
