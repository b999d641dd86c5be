// What Read makes of a file from its head: text, binary, image, PDF
// or notebook.

package tools

import (
	"path"
	"path/filepath"
	"strings"
)

// sniffBytes is how much of a file's head decides its kind: the magic
// numbers, a byte order mark, and NUL bytes for binary (as git does).
const sniffBytes = 8 << 10

// fileKind is what Read makes of a file.
type fileKind int

const (
	kindText fileKind = iota
	kindBinary
	kindImage
	kindPDF
	kindNotebook
)

// classifyFile decides by content, not by name, except for notebooks, which are
// JSON and can only be told apart by their extension.
func classifyFile(head []byte, name string) (fileKind, string) {
	if strings.HasPrefix(string(head), "%PDF-") {
		return kindPDF, ""
	}
	if format := imageFormat(head); format != "" {
		return kindImage, format
	}
	if strings.EqualFold(path.Ext(filepath.ToSlash(name)), ".ipynb") {
		return kindNotebook, ""
	}
	if detectEncoding(head) != encUTF8 {
		return kindText, ""
	}
	if strings.IndexByte(string(head), 0) >= 0 {
		return kindBinary, ""
	}
	return kindText, ""
}

func kindName(k fileKind, format string) string {
	switch k {
	case kindImage:
		return strings.ToUpper(format) + " image"
	case kindPDF:
		return "PDF"
	case kindNotebook:
		return "notebook"
	}
	return "text file"
}

// EditorText reports whether a file with this head (its first bytes, up to
// 8 KiB) and name is plain UTF-8 text, the one kind an editor lent to the
// session (ferry acp) serves: not a PDF, image, notebook, binary file, nor
// text in another encoding (UTF-16, a byte order mark), which ferry keeps
// reading and writing on its own disk.
func EditorText(head []byte, name string) bool {
	if len(head) > sniffBytes {
		head = head[:sniffBytes]
	}
	k, _ := classifyFile(head, name)
	return k == kindText && detectEncoding(head) == encUTF8
}
