package main

import (
	"bufio"
	"cmp"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Rows for symbols that belong to no module: the runtime's own code,
// linker-made data (go:*), descriptors and helpers of builtin or
// generic-shape types, and symbols without a package (assembly, cgo).
const (
	rowRuntime = "runtime"
	rowLinker  = "go:* (linker data: funcdata, itabs of builtins, inittasks)"
	rowBuiltin = "type:* of builtin and shape types"
	rowNoPkg   = "no package (assembly, cgo)"
	rowMain    = "ferry"
)

// modules says which module a package path belongs to: the dependency
// module paths of the binary's build info and the main module's path.
type modules struct {
	main string
	deps []string // longest first, so that a nested module wins
}

func newModules(main string, deps []string) modules {
	ds := slices.Clone(deps)
	slices.SortFunc(ds, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return modules{main: main, deps: ds}
}

// row is the table row of package path pkg: "ferry" for the main module,
// the module path for a dependency, "std: TOP" for the standard library
// grouped by its top-level package (vendored x/ packages under "std:
// vendor"), and the first path elements when no module of the build info
// matches.
func (m modules) row(pkg string) string {
	if pkg == "runtime" || strings.HasPrefix(pkg, "runtime/") || strings.HasPrefix(pkg, "internal/runtime/") {
		return rowRuntime
	}
	if pkg == "main" || m.main != "" && (pkg == m.main || strings.HasPrefix(pkg, m.main+"/")) {
		return rowMain
	}
	for _, d := range m.deps {
		if pkg == d || strings.HasPrefix(pkg, d+"/") {
			return d
		}
	}
	first, _, _ := strings.Cut(pkg, "/")
	if !strings.Contains(first, ".") {
		return "std: " + first
	}
	// Not in the build info: guess the module root from the host's
	// convention (github.com/owner/name, golang.org/x/name, else host/name).
	parts := strings.Split(pkg, "/")
	n := 2
	if first == "github.com" || first == "golang.org" || first == "gitlab.com" || first == "bitbucket.org" {
		n = 3
	}
	if len(parts) > n {
		parts = parts[:n]
	}
	return strings.Join(parts, "/")
}

// symbolRow attributes one symbol name, as `go tool nm` prints it, to a
// row of the size table.
func (m modules) symbolRow(name string) string {
	pkg, special := symbolPackage(name)
	if special != "" {
		return special
	}
	return m.row(pkg)
}

// symbolPackage returns the import path of the package that owns the
// symbol name, or a special row when no package does. It knows the
// linker's forms: pkg.F, pkg.(*T).M, pkg.T.M-fm, pkg.F.func1, pkg.init.0,
// pkg..dict.F[...] and pkg.F[...] (generic instantiations, whose type
// arguments name other packages), go:itab.T,I (owned by the concrete type
// T), type:.eq.T / type:.hash.T / type:*T (owned by T's package), go:struct
// {...}.M wrappers, and escaped dots in the last path element
// (nats%2ego).
func symbolPackage(name string) (pkg, special string) {
	switch {
	case strings.HasPrefix(name, "go:itab."):
		rest := name[len("go:itab."):]
		return typePackage(rest[:topLevelComma(rest)])
	case strings.HasPrefix(name, "go:struct "), strings.HasPrefix(name, "go:(*struct "),
		strings.HasPrefix(name, "go:interface "), strings.HasPrefix(name, "go:(*interface "):
		// Methods of unnamed struct types (promoted through embedding).
		return typePackage(name[len("go:"):])
	case strings.HasPrefix(name, "go:"):
		return "", rowLinker
	case strings.HasPrefix(name, "type:"):
		rest := name[len("type:"):]
		for _, p := range []string{".eq.", ".hash.", ".namedata.", ".importpath.", ".gcmask.", ".gcprog."} {
			if strings.HasPrefix(rest, p) {
				rest = rest[len(p):]
				break
			}
		}
		if strings.HasPrefix(name, "type:.importpath.") {
			return strings.TrimSuffix(unescape(rest), "."), ""
		}
		return typePackage(rest)
	}
	if p, ok := funcPackage(name); ok {
		return p, ""
	}
	return "", rowNoPkg
}

// funcPackage splits a function or variable symbol into its package: the
// first dot after the last slash, looking only before any type arguments
// or receiver, since those may contain slashes of their own.
func funcPackage(name string) (string, bool) {
	s := name
	if i := strings.IndexAny(s, "[( "); i >= 0 {
		s = s[:i]
	}
	slash := strings.LastIndexByte(s, '/')
	dot := strings.IndexByte(s[slash+1:], '.')
	if dot <= 0 {
		return "", false
	}
	return unescape(s[:slash+1+dot]), true
}

// typePackage returns the package of the first package-qualified name in
// a type's spelling (*T, []T, map[K]V, struct { F p.T }, generic T[...]);
// builtin types and generic shapes (go.shape.*) have none.
func typePackage(t string) (string, string) {
	for tok := range strings.FieldsFuncSeq(t, func(r rune) bool {
		return strings.ContainsRune(" *[](){},;<", r)
	}) {
		if strings.HasPrefix(tok, "go.shape.") || tok == "go.shape" {
			continue
		}
		if p, ok := funcPackage(tok); ok {
			return p, ""
		}
	}
	return "", rowBuiltin
}

// topLevelComma is the index of the first comma of s outside brackets and
// braces (the end of an itab's concrete type), or len(s).
func topLevelComma(s string) int {
	depth := 0
	for i, r := range s {
		switch r {
		case '[', '{', '(':
			depth++
		case ']', '}', ')':
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

// unescape undoes the linker's escaping of path characters (%2e for a dot
// in the last element).
func unescape(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if v, err := strconv.ParseUint(p[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// nmSymbol is one line of `go tool nm -size`.
type nmSymbol struct {
	addr, size uint64
	kind       byte
	name       string
}

// parseNM reads `go tool nm -size` output: address, size, type, name
// (the name may contain spaces). Undefined symbols have no address.
func parseNM(r io.Reader) ([]nmSymbol, error) {
	var out []nmSymbol
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimLeft(sc.Text(), " ")
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 2)
		var s nmSymbol
		var err error
		if len(f) == 2 {
			rest := strings.TrimLeft(f[1], " ")
			if sz, tail, ok := strings.Cut(rest, " "); ok && len(tail) > 2 && tail[1] == ' ' {
				// address size type name
				if s.addr, err = strconv.ParseUint(f[0], 16, 64); err == nil {
					s.size, err = strconv.ParseUint(sz, 10, 64)
				}
				s.kind, s.name = tail[0], tail[2:]
			} else if len(rest) > 2 && rest[1] == ' ' {
				// size type name (undefined: no address)
				s.size, err = strconv.ParseUint(f[0], 10, 64)
				s.kind, s.name = rest[0], rest[2:]
			} else {
				err = errors.New("want address size type name")
			}
		} else {
			err = errors.New("want address size type name")
		}
		if err != nil {
			return nil, fmt.Errorf("nm line %d %q: %w", n, line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// sizeRow is one module's share of the binary.
type sizeRow struct {
	name       string
	text, data uint64 // code; read-only and writable data stored in the file
	syms       int
}

// attributeSizes sums the symbols by row. Only symbols inside a section
// stored in the file count (bss and noptrbss take memory, not bytes on
// disk); secs gives the file-backed address ranges and which are code.
func attributeSizes(syms []nmSymbol, mods modules, secs []elfSection) (rows []sizeRow, total uint64) {
	by := map[string]*sizeRow{}
	for _, s := range syms {
		if s.size == 0 || s.kind == 'U' {
			continue
		}
		sec := findSection(secs, s.addr)
		if sec == nil || !sec.inFile {
			continue
		}
		name := mods.symbolRow(s.name)
		r := by[name]
		if r == nil {
			r = &sizeRow{name: name}
			by[name] = r
		}
		if sec.code {
			r.text += s.size
		} else {
			r.data += s.size
		}
		r.syms++
		total += s.size
	}
	for _, r := range by {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b sizeRow) int {
		return cmp.Or(cmp.Compare(b.text+b.data, a.text+a.data), cmp.Compare(a.name, b.name))
	})
	return rows, total
}

// elfSection is one allocated section's address range.
type elfSection struct {
	name         string
	addr, size   uint64
	inFile, code bool
}

func findSection(secs []elfSection, addr uint64) *elfSection {
	for i := range secs {
		if addr >= secs[i].addr && addr < secs[i].addr+secs[i].size {
			return &secs[i]
		}
	}
	return nil
}

// readSections lists the sections of an ELF file: allocated ones with
// their address ranges, and the others (DWARF, symbol tables) by size.
func readSections(bin string) ([]elfSection, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("read ELF sections of %s: %w", bin, err)
	}
	defer f.Close()
	var out []elfSection
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NULL {
			continue
		}
		size := s.Size
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			size = s.FileSize // what it takes on disk
		}
		out = append(out, elfSection{
			name: s.Name, addr: s.Addr, size: size,
			inFile: s.Type != elf.SHT_NOBITS,
			code:   s.Flags&elf.SHF_EXECINSTR != 0,
		})
	}
	return out, nil
}

// allocated keeps the sections mapped at run time (address ranges for
// attributing symbols).
func allocated(secs []elfSection) []elfSection {
	var out []elfSection
	for _, s := range secs {
		if s.addr != 0 {
			out = append(out, s)
		}
	}
	return out
}

// binaryModules reads the main module and dependency paths from the
// binary's build info.
func binaryModules(bin string) (modules, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return modules{}, fmt.Errorf("build info of %s: %w", bin, err)
	}
	var deps []string
	for _, d := range bi.Deps {
		deps = append(deps, d.Path)
	}
	return newModules(bi.Main.Path, deps), nil
}

// sizeReport is everything -size prints for one build.
type sizeReport struct {
	label          string
	fileSize       uint64
	releaseSize    uint64
	sections       []elfSection
	releaseSecs    []elfSection
	rows           []sizeRow
	attributed     uint64
	allocFileBytes uint64 // text+rodata+data etc. stored in the file
}

// measureSize reads the default build bin (with symbols) and the release
// build rel (stripped, may be "").
func measureSize(label, bin, rel string) (*sizeReport, error) {
	r := &sizeReport{label: label}
	st, err := os.Stat(bin)
	if err != nil {
		return nil, fmt.Errorf("size of %s: %w", bin, err)
	}
	r.fileSize = uint64(st.Size())
	if r.sections, err = readSections(bin); err != nil {
		return nil, err
	}
	if rel != "" {
		st, err := os.Stat(rel)
		if err != nil {
			return nil, fmt.Errorf("size of %s: %w", rel, err)
		}
		r.releaseSize = uint64(st.Size())
		if r.releaseSecs, err = readSections(rel); err != nil {
			return nil, err
		}
	}
	mods, err := binaryModules(bin)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("go", "tool", "nm", "-size", "-sort", "size", bin).Output() //nolint:gosec // the bench's own build
	if err != nil {
		return nil, fmt.Errorf("go tool nm %s: %w", bin, err)
	}
	syms, err := parseNM(strings.NewReader(string(out)))
	if err != nil {
		return nil, err
	}
	alloc := allocated(r.sections)
	r.rows, r.attributed = attributeSizes(syms, mods, alloc)
	for _, s := range alloc {
		if s.inFile {
			r.allocFileBytes += s.size
		}
	}
	return r, nil
}
