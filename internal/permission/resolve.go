package permission

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Rules match a file tool's path as given and with its symbolic links
// resolved, so that `Read(secret.txt)` in deny also stops a read of a link
// to secret.txt, and `Edit(protected/**)` a write to plink/x where plink
// links to protected. Resolving follows the file tools (vfs.Local): like
// `realpath -m`, links are followed wherever they point, ".." goes to the
// physical parent, and the part past the first missing component is taken
// as written (a file about to be created). Resolving only reads metadata
// (Lstat and Readlink): it never opens a file, so it cannot block.

// maxLinks bounds the links one resolution follows, as the kernel does.
const maxLinks = 40

// realPath resolves the symbolic links of p, an absolute slash-separated
// path that need not be clean: ".." after a link is resolved against the
// link's target.
func realPath(p string) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%q is not absolute", p)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%q: %w", p, fs.ErrInvalid)
	}
	cur := "/"
	comps := strings.Split(p, "/")
	links, missing := 0, 0 // missing: literal components past the first that does not exist
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			if missing > 0 {
				missing--
			}
			continue
		}
		next := path.Join(cur, c)
		if missing > 0 {
			cur = next
			missing++
			continue
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			cur, missing = next, 1
			continue
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("%s: more than %d symbolic links: %w", p, maxLinks, syscall.ELOOP)
		}
		dest, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(dest) {
			cur = "/"
		}
		comps = append(strings.Split(dest, "/"), comps...)
	}
	return cur, nil
}

// globMeta are the characters that make a pattern segment more than
// fixed text.
const globMeta = `*?[]{}\!`

// realPattern is pat with the fixed directories it starts with resolved
// ("" when that changes nothing or cannot be done): `/tmp/**` is also
// `/private/tmp/**` where /tmp links there, and a relative `protected/**`
// is also where protected leads when it is a link. abs reports whether
// the result is absolute (a relative pattern leading out of the workspace
// becomes absolute).
func (m matcher) realPattern(pat string) (out string, abs bool) {
	segs := strings.Split(pat, "/")
	n := 0
	for n < len(segs) && !strings.ContainsAny(segs[n], globMeta) {
		n++
	}
	if n == 0 || (n == 1 && segs[0] == "") {
		return "", false
	}
	prefix, rest := strings.Join(segs[:n], "/"), ""
	if n < len(segs) {
		rest = "/" + strings.Join(segs[n:], "/")
	}
	base := prefix
	if !path.IsAbs(prefix) {
		if m.ws == "" {
			return "", false
		}
		base = path.Join(m.ws, prefix)
	}
	real, err := realPath(base)
	if err != nil || real == base {
		return "", false
	}
	if !path.IsAbs(prefix) && m.wsReal != "" {
		if r, ok := relTo(real, m.wsReal); ok {
			if r == "." && rest != "" {
				return rest[1:], false
			}
			return escapePattern(r) + rest, false
		}
	}
	if out = strings.TrimSuffix(escapePattern(real), "/") + rest; out == "" {
		out = "/"
	}
	return out, true
}

// escapePattern makes a resolved path fixed text inside a pattern.
func escapePattern(p string) string {
	if !strings.ContainsAny(p, globMeta) {
		return p
	}
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(globMeta, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// relTo is p relative to root ("." for root itself) when p is root or
// below it.
func relTo(p, root string) (string, bool) {
	if p == root {
		return ".", true
	}
	rest, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/")
	return rest, ok
}
