package permission_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/permission"
)

// The grammar of TestBashSmugglingProperty. Every payload tries to create
// the file MARKER; touch is the one program the rules do not allow.

// exprs are arithmetic expressions that run the payload when evaluated.
var exprs = []string{
	"a[$(touch MARKER)]",
	"a[`touch MARKER`]",
	"1+a[$(touch MARKER)]",
	"a[$(touch MARKER)]*2",
	"b[a[$(touch MARKER)]]",
}

// quoted writes e as one shell word that is fixed text: bash sees e.
func quoted(rng *rand.Rand, e string) string {
	switch rng.IntN(4) {
	case 0:
		return "'" + e + "'"
	case 1:
		return `"` + strings.NewReplacer("$", `\$`, "`", "\\`").Replace(e) + `"`
	case 2:
		var b strings.Builder
		for _, r := range e {
			if strings.ContainsRune("$()[]`*+ ", r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	return "$'" + strings.ReplaceAll(e, "'", `\'`) + "'"
}

// forms build one command from a quoted expression q and the raw one e.
// Some evaluate it (smuggling), some only carry it as data (they must stay
// allowed, and prove that allowed lines really run).
var forms = []func(rng *rand.Rand, q, e string) string{
	// Builtins that take a variable name.
	func(_ *rand.Rand, q, _ string) string { return "printf -v " + q + " %s 1" },
	func(_ *rand.Rand, q, _ string) string { return "printf -v" + q + " %s 1" },
	func(_ *rand.Rand, q, _ string) string { return "printf -v " + q + " -- 1" },
	func(_ *rand.Rand, q, _ string) string { return "command printf -v " + q + " 1" },
	func(_ *rand.Rand, q, _ string) string { return "builtin printf -v " + q + " 1" },
	func(_ *rand.Rand, q, _ string) string { return "test -v " + q },
	func(_ *rand.Rand, q, _ string) string { return "test ! -v " + q },
	func(_ *rand.Rand, q, _ string) string { return "[[ -v " + q + " ]]" },
	func(_ *rand.Rand, q, _ string) string { return "read " + q + " <<< 1" },
	func(_ *rand.Rand, q, _ string) string { return "read -r " + q + " <<< 1" },
	func(_ *rand.Rand, q, _ string) string { return "read -ra " + q + " <<< 1" },
	func(_ *rand.Rand, q, _ string) string { return "mapfile " + q + " <<< 1" },
	func(_ *rand.Rand, q, _ string) string { return "readarray -t " + q + " <<< 1" },
	func(_ *rand.Rand, q, _ string) string { return "read -a a <<< 1; unset " + q },
	func(_ *rand.Rand, q, _ string) string { return "read -a a <<< 1; unset -v " + q },
	func(_ *rand.Rand, q, _ string) string { return "getopts a " + q + " -a" },
	func(_ *rand.Rand, q, _ string) string { return "sleep 0 & wait -n -p " + q },
	// Arithmetic contexts.
	func(_ *rand.Rand, q, _ string) string { return "let " + q },
	func(_ *rand.Rand, _, e string) string { return "(( " + e + " ))" },
	func(_ *rand.Rand, _, e string) string { return "echo $(( " + e + " ))" },
	func(_ *rand.Rand, _, e string) string { return "echo $[ " + e + " ]" },
	func(_ *rand.Rand, _, e string) string { return "for ((i=" + e + "; i<1; i++)); do true; done" },
	func(rng *rand.Rand, q, _ string) string {
		op := []string{"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}[rng.IntN(6)]
		return "[[ " + q + " " + op + " 1 ]]"
	},
	func(_ *rand.Rand, _, e string) string { return "read -a a <<< 1; echo ${a[" + e + "]}" },
	func(_ *rand.Rand, _, e string) string { return "echo ${PATH:" + e + "}" },
	func(_ *rand.Rand, _, e string) string { return "echo ${PATH:0:" + e + "}" },
	// The expression as data, evaluated by a later command.
	func(rng *rand.Rand, q, _ string) string {
		use := []string{
			"echo $((x))", "(( x ))", "[[ x -eq 1 ]]", "[[ $x -gt 0 ]]", "echo ${!x}",
			"echo ${PATH:x}", `printf -v "$x" 1`, `test -v "$x"`, "let x", "echo $[x]",
		}[rng.IntN(10)]
		read := []string{"read x <<< " + q, "printf -v x %s " + q, "mapfile -t x <<< " + q, "getopts a: o -a " + q + "; x=$OPTARG"}[rng.IntN(4)]
		return read + "; " + use
	},
	func(_ *rand.Rand, q, _ string) string {
		return "read x <<< " + strings.Replace(q, "a[", "-va[", 1) + `; printf "$x" 1`
	},
	func(_ *rand.Rand, _, _ string) string { return `read x <<< '$(touch MARKER)'; echo ${x@P}` },
	func(_ *rand.Rand, q, _ string) string { return "read b <<< " + q + "; cat {a[b]}</dev/null" },
	// Builtins and programs that run code.
	func(rng *rand.Rand, _, _ string) string {
		return []string{
			"trap 'touch MARKER' EXIT", "mapfile -C 'touch MARKER' -c 1 a <<< 1", "compgen -C 'touch MARKER' x",
			"compgen -W '$(touch MARKER)' x", "jobs -x touch MARKER", "hash -p /usr/bin/touch ls; ls MARKER",
			"shopt -s expand_aliases; alias ls='touch MARKER'\nls MARKER", `find . -maxdepth 0 -exec touch MARKER \;`,
			"xargs touch <<< MARKER", "env touch MARKER", "timeout 5 touch MARKER", "bash -c 'touch MARKER'",
			"eval 'touch MARKER'", "nice touch MARKER", "command touch MARKER", "builtin eval 'touch MARKER'",
		}[rng.IntN(16)]
	},
	// Inert: the payload as plain data, or the builtins used plainly.
	func(_ *rand.Rand, q, _ string) string { return "printf '%s\\n' " + q },
	func(_ *rand.Rand, q, _ string) string { return "echo " + q },
	func(_ *rand.Rand, q, _ string) string { return "read -r x <<< " + q + `; echo "$x" "${#x}"` },
	func(_ *rand.Rand, q, _ string) string { return "test -n " + q },
	func(_ *rand.Rand, q, _ string) string { return "[[ " + q + " == x ]]" },
	func(_ *rand.Rand, _, _ string) string { return `printf -v y %s 1; echo "$y"` },
	func(_ *rand.Rand, _, _ string) string {
		return `read -ra p <<< "a b"; echo "${p[@]}" "${p[0]}" "${#p[@]}"`
	},
	func(_ *rand.Rand, _, _ string) string { return "trap - EXIT; test -v HOME" },
	func(_ *rand.Rand, q, _ string) string { return "command -v " + q },
}

// snippet is one random line: one to three commands joined by operators,
// each maybe in a compound command.
func snippet(rng *rand.Rand) string {
	n := 1 + rng.IntN(3)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString([]string{"; ", " && ", " || ", " | ", "\n"}[rng.IntN(5)])
		}
		e := exprs[rng.IntN(len(exprs))]
		cmd := forms[rng.IntN(len(forms))](rng, quoted(rng, e), e)
		switch rng.IntN(8) {
		case 0:
			cmd = "( " + cmd + " )"
		case 1:
			cmd = "{ " + cmd + "; }"
		case 2:
			cmd = "if true; then " + cmd + "; fi"
		case 3:
			cmd = "! " + cmd
		case 4:
			cmd = "echo $(" + cmd + ")"
		}
		b.WriteString(cmd)
	}
	return b.String()
}

// runsPayload runs line under bash in a fresh directory and reports
// whether it created MARKER, and whether bash had to be stopped (bash 5.2
// loops forever on some bad subscripts).
func runsPayload(t *testing.T, bashPath, line string) (created, stopped bool) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bashPath, "--norc", "--noprofile", "-c", line)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	cmd.Stdin = nil // /dev/null
	cmd.WaitDelay = time.Second
	_ = cmd.Run() // many lines fail on purpose; only the marker counts
	_, err := os.Lstat(filepath.Join(dir, "MARKER"))
	return !errors.Is(err, os.ErrNotExist), ctx.Err() != nil
}

// runAll runs each line through runsPayload, a few at a time (each in its
// own directory, so they cannot see each other's markers): most of the
// test's time is bash starting, and some asked lines run until the
// 5-second stop.
func runAll(t *testing.T, bashPath string, lines []string) (created, stopped []bool) {
	t.Helper()
	created, stopped = make([]bool, len(lines)), make([]bool, len(lines))
	sem := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, line := range lines {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			created[i], stopped[i] = runsPayload(t, bashPath, line)
		})
	}
	wg.Wait()
	return created, stopped
}

// TestBashSmugglingProperty: random lines from a grammar of the
// constructs that make bash run code no simple command shows. Every line
// the rules allow without asking is run under bash in a temporary
// directory and must not create the marker every payload tries to create.
// A sample of the lines asked about is run too, to show the grammar's
// payloads are live.
func TestBashSmugglingProperty(t *testing.T) {
	t.Parallel()
	bashPath, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed (apt-get install bash)")
	}
	r := mustRules(t, smuggleRules, nil, nil)
	const total = 2000
	rng := rand.New(rand.NewPCG(16, 5))
	seen := map[string]bool{}
	var allowed, asked []string
	for range total {
		line := snippet(rng)
		if seen[line] {
			continue
		}
		seen[line] = true
		if r.Decide(bash(line)) == permission.Allow {
			allowed = append(allowed, line)
		} else {
			asked = append(asked, line)
		}
	}
	created, stopped := runAll(t, bashPath, allowed)
	for i, line := range allowed {
		if created[i] {
			t.Errorf("allowed without asking, but bash ran the payload: %q", line)
		}
		if stopped[i] {
			t.Errorf("allowed without asking, but bash did not finish in time: %q", line)
		}
	}
	sample := asked
	if len(sample) > 100 {
		sample = sample[:100]
	}
	live := 0
	created, _ = runAll(t, bashPath, sample)
	for _, c := range created {
		if c {
			live++
		}
	}
	t.Logf("%d snippets generated, %d distinct: %d allowed and run under bash (none created the marker); %d asked, of which %d of a sample of %d ran the payload under bash",
		total, len(seen), len(allowed), len(asked), live, len(sample))
	// The test proves something only if both halves are populated.
	if len(allowed) < 50 || live < len(sample)/4 {
		t.Fatalf("grammar too weak: %d allowed, %d of %d asked lines live", len(allowed), live, len(sample))
	}
}
