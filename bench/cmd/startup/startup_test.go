package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testModules are dependency modules of the real ferry binary (from its
// build info), including ones whose path has a dot in the last element
// or a major-version suffix.
var testModules = newModules("github.com/ferry-dev/ferry", []string{
	"github.com/nats-io/nats.go",
	"github.com/openai/openai-go/v3",
	"github.com/anthropics/anthropic-sdk-go/v2",
	"modernc.org/sqlite",
	"modernc.org/libc",
	"gvisor.dev/gvisor",
	"tailscale.com",
	"golang.org/x/text",
	"golang.org/x/net",
	"github.com/gaissmai/bart",
	"github.com/prometheus/client_golang",
	"github.com/jackc/pgx/v5",
	"github.com/klauspost/compress",
	"go.opentelemetry.io/otel",
	"github.com/pdfcpu/pdfcpu",
	"gopkg.in/yaml.v3",
	"github.com/google/jsonschema-go",
})

func TestSymbolRow(t *testing.T) {
	for _, c := range []struct{ sym, want string }{
		// functions, methods, closures, method values, init functions
		{"github.com/google/jsonschema-go/jsonschema.(*state).validate", "github.com/google/jsonschema-go"},
		{"github.com/openai/openai-go/v3/internal/apijson.(*decoderBuilder).newStructTypeDecoder.func1", "github.com/openai/openai-go/v3"},
		{"github.com/ferry-dev/ferry/internal/push.(*Service).work-fm", rowMain},
		{"github.com/ferry-dev/ferry/internal/tools.map.init.0", rowMain},
		{"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model..gobytes.2", "github.com/pdfcpu/pdfcpu"},
		{"modernc.org/sqlite/lib._sqlite3VdbeExec", "modernc.org/sqlite"},
		{"modernc.org/libc.init", "modernc.org/libc"},
		{"tailscale.com/wgengine/magicsock.(*Conn).handleDiscoMessage", "tailscale.com"},
		{"gvisor.dev/gvisor/pkg/tcpip/stack.DefaultTables", "gvisor.dev/gvisor"},
		{"main.main", rowMain},
		// an escaped dot in the last path element, and a module path with one
		{"github.com/nats-io/nats%2ego.(*Conn).doReconnect", "github.com/nats-io/nats.go"},
		{"gopkg.in/yaml%2ev3.(*parser).parse", "gopkg.in/yaml.v3"},
		// generic instantiations: the function's package, not the type argument's
		{"github.com/ferry-dev/ferry/internal/search/fuzzy.termBound[go.shape.uint8]", rowMain},
		{"slices.partitionCmpFunc[go.shape.struct { ID string; CreatedAt time.Time }]", "std: slices"},
		{"github.com/gaissmai/bart/internal/nodes..dict.BartNode[*tailscale.com/net/routemanager.PeerRoute]", "github.com/gaissmai/bart"},
		{"github.com/gaissmai/bart/internal/nodes.(*LiteNode[go.shape.struct {}]).dump", "github.com/gaissmai/bart"},
		// itabs belong to the concrete type
		{"go:itab.*github.com/nats-io/nats%2ego.js,github.com/nats-io/nats%2ego.JetStreamContext", "github.com/nats-io/nats.go"},
		{"go:itab.*github.com/ferry-dev/ferry/internal/store/sqlite.Store,github.com/ferry-dev/ferry/internal/store.Store", rowMain},
		{"go:itab.*errors.errorString,error", "std: errors"},
		{"go:itab.struct { *github.com/prometheus/client_golang/prometheus/promhttp.responseWriterDelegator; net/http.Flusher },net/http.ResponseWriter", "github.com/prometheus/client_golang"},
		// type descriptors and helpers
		{"type:*github.com/jackc/pgx/v5/pgconn.FieldDescription", "github.com/jackc/pgx/v5"},
		{"type:.eq.github.com/anthropics/anthropic-sdk-go/v2.shadow.492", "github.com/anthropics/anthropic-sdk-go/v2"},
		{"type:.eq.[16]github.com/jackc/pgx/v5/pgconn.FieldDescription", "github.com/jackc/pgx/v5"},
		{"type:.eq.struct { Content github.com/openai/openai-go/v3/packages/respjson.Field; github.com/openai/openai-go/v3.raw string }", "github.com/openai/openai-go/v3"},
		{"type:.hash.net/http.connectMethodKey", "std: net"},
		{"type:.gcmask.github.com/klauspost/compress/zstd.bestFastEncoder", "github.com/klauspost/compress"},
		{"type:.importpath.golang.org/x/text/unicode/norm.", "golang.org/x/text"},
		{"type:map[string]github.com/ferry-dev/ferry/protocol.Envelope", rowMain},
		// unattributable: builtins, shapes, the runtime, linker data, assembly
		{"type:.eq.go.shape.d4ad02380b762622c835d5cdbb94c6f01eb707c066d095999f031e75a146847b", rowBuiltin},
		{"type:.eq.[8]string", rowBuiltin},
		{"type:.eq.struct { NewInternalPort string; NewEnabled string }", rowBuiltin},
		{"type:*", rowBuiltin},
		{"go:func.*", rowLinker},
		{"go:main.inittasks", rowLinker},
		{"go:buildinfo", rowLinker},
		{"runtime.findfunctab", rowRuntime},
		{"internal/runtime/maps.(*Iter).Next", rowRuntime},
		{"runtime/pprof.(*profileBuilder).addMapping-fm", rowRuntime},
		{"aeshashbody", rowNoPkg},
		{"p256MulInternal", rowNoPkg},
		// the standard library by top-level package, vendored x/ under std
		{"crypto/internal/fips140/sha3.keccakF1600.abi0", "std: crypto"},
		{"vendor/golang.org/x/crypto/chacha20poly1305.chacha20Poly1305Seal.abi0", "std: vendor"},
		{"golang.org/x/net/idna.idnaValues", "golang.org/x/net"},
		// not in the build info: the host's convention
		{"github.com/someone/else/pkg.F", "github.com/someone/else"},
		{"example.org/mod/pkg.F", "example.org/mod"},
	} {
		if got := testModules.symbolRow(c.sym); got != c.want {
			t.Errorf("symbolRow(%q) = %q, want %q", c.sym, got, c.want)
		}
	}
}

// sectionsOfFerry is the allocated-section layout of a real ferry build
// (readelf -S), for the addresses in testdata/nm.txt.
var sectionsOfFerry = []elfSection{
	{name: ".text", addr: 0x401000, size: 0x2e07d11, inFile: true, code: true},
	{name: ".rodata", addr: 0x3209000, size: 0x16389d9, inFile: true},
	{name: ".gopclntab", addr: 0x48419e0, size: 0x2be068e, inFile: true},
	{name: ".typelink", addr: 0x7422e20, size: 0x2ffb0, inFile: true},
	{name: ".itablink", addr: 0x7452de0, size: 0xaeb8, inFile: true},
	{name: ".go.buildinfo", addr: 0x745e000, size: 0x2740, inFile: true},
	{name: ".noptrdata", addr: 0x7460ce0, size: 0xe2b81, inFile: true},
	{name: ".data", addr: 0x7543880, size: 0x45d22, inFile: true},
	{name: ".bss", addr: 0x75895c0, size: 0x2e438},
	{name: ".noptrbss", addr: 0x75b7a00, size: 0x202dce0},
}

func TestAttributeRealNM(t *testing.T) {
	f, err := os.Open("testdata/nm.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := parseNM(f)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(mustRead(t, "testdata/nm.txt"), "\n")
	if len(syms) != lines {
		t.Fatalf("parsed %d symbols from %d lines", len(syms), lines)
	}
	var undefined int
	for _, s := range syms {
		if s.kind == 'U' {
			undefined++
			if s.addr != 0 || s.size != 0 || strings.Contains(s.name, " ") {
				t.Errorf("undefined symbol parsed as %+v", s)
			}
		}
	}
	if undefined != 3 {
		t.Errorf("%d undefined symbols, want the 3 of the file", undefined)
	}
	for _, s := range syms {
		if strings.HasPrefix(s.name, "type:.eq.struct { NewInternalPort") && s.size != 296 {
			t.Errorf("name with spaces: %+v, want size 296", s)
		}
	}
	rows, total := attributeSizes(syms, testModules, sectionsOfFerry)
	by := map[string]sizeRow{}
	var sum uint64
	for _, r := range rows {
		by[r.name] = r
		sum += r.text + r.data
		if strings.ContainsAny(r.name, " {}[]*%") && !strings.HasPrefix(r.name, "std: ") && r.name != rowLinker &&
			r.name != rowBuiltin && r.name != rowNoPkg {
			t.Errorf("row %q looks like a piece of a symbol name", r.name)
		}
	}
	if sum != total {
		t.Errorf("rows sum to %d, total %d", sum, total)
	}
	// 32 MiB of drbg.memory is in .noptrbss: memory, not file bytes.
	if r, ok := by["std: crypto"]; !ok || r.text+r.data > 1<<20 {
		t.Errorf("std: crypto row %+v counts bss", r)
	}
	// nats.go: three methods (text) and one itab (rodata).
	if r := by["github.com/nats-io/nats.go"]; r.syms != 4 || r.text != 9334+7563+5582 || r.data != 384 {
		t.Errorf("nats.go row %+v, want 3 functions and a 384-byte itab", r)
	}
	if r := by[rowLinker]; r.data < 5496352 {
		t.Errorf("linker row %+v lacks go:func.*", r)
	}
	if rows[0].name != rowLinker {
		t.Errorf("largest row %q, want the linker's go:func.*", rows[0].name)
	}
}

// TestSizeOfRealBinary runs the whole -size path (ELF sections, build
// info, go tool nm, attribution) on a real build of this command (test
// binaries are linked without a symbol table).
func TestSizeOfRealBinary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on PATH (install Go)")
	}
	exe := filepath.Join(t.TempDir(), "startup")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r, err := measureSize("startup", exe, "")
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]sizeRow{}
	for _, row := range r.rows {
		by[row.name] = row
	}
	for _, want := range []string{rowRuntime, rowMain, "std: fmt", "std: debug"} {
		if by[want].text == 0 {
			t.Errorf("no code attributed to %q; rows: %v", want, r.rows)
		}
	}
	if r.attributed == 0 || r.attributed > r.allocFileBytes || r.allocFileBytes > r.fileSize {
		t.Errorf("attributed %d, allocated in file %d, file %d: want 0 < attributed <= allocated <= file",
			r.attributed, r.allocFileBytes, r.fileSize)
	}
}

func TestParseNMErrors(t *testing.T) {
	for _, in := range []string{"zz 12 T x\n", " 401000 twelve T x\n", "401000\n"} {
		if _, err := parseNM(strings.NewReader(in)); err == nil {
			t.Errorf("parseNM(%q) accepted a malformed line", in)
		}
	}
}

func TestParseInitTraceReal(t *testing.T) {
	tr, err := parseInitTrace(strings.NewReader(mustRead(t, "testdata/inittrace.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.entries) != 424 {
		t.Errorf("%d entries, want the file's 424 init lines", len(tr.entries))
	}
	top := tr.top(10)
	if len(top) != 10 || top[0].pkg != "github.com/santhosh-tekuri/jsonschema/v6" || top[0].clock != 23 ||
		top[0].bytes != 1701608 || top[0].allocs != 21289 {
		t.Fatalf("top entry %+v", top[0])
	}
	if top[1].pkg != "github.com/pdfcpu/pdfcpu/internal/corefont/metrics" || top[1].clock != 8.6 {
		t.Errorf("second entry %+v", top[1])
	}
	for i := 1; i < len(top); i++ {
		if top[i].clock > top[i-1].clock {
			t.Errorf("top not sorted at %d: %v", i, top)
		}
	}
	if tr.clock < 75 || tr.clock > 80 || tr.bytes < 3<<20 {
		t.Errorf("totals clock %.2f ms, %d bytes", tr.clock, tr.bytes)
	}
}

func TestParseInitTraceErrors(t *testing.T) {
	for _, in := range []string{
		"ferry dev\n", // no init lines
		"init runtime @0.29 ms, 0.14 ms clock, 0 bytes\n",
		"init runtime @0.29 ms, x ms clock, 0 bytes, 0 allocs\n",
		"init runtime @0.29 ms, 0.14 ms, 0 bytes, 0 allocs\n",
	} {
		if _, err := parseInitTrace(strings.NewReader(in)); err == nil {
			t.Errorf("parseInitTrace(%q) accepted it", in)
		}
	}
}

// TestParseInitTraceLive parses the trace of a real Go process: this test
// binary, started again with GODEBUG=inittrace=1 and no tests to run.
func TestParseInitTraceLive(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	tr, err := parseInitTrace(&stderr)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range tr.entries {
		seen[e.pkg] = true
	}
	for _, want := range []string{"runtime", "os", "testing"} {
		if !seen[want] {
			t.Errorf("no init line for %s", want)
		}
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
