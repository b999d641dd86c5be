package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/cli"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, args)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := run("version")
	if code != cli.ExitOK || !strings.HasPrefix(out, "ferry ") || !strings.Contains(out, "protocol 1") {
		t.Fatalf("version: code %d, output %q", code, out)
	}
	if code, _, _ := run("--version"); code != cli.ExitOK {
		t.Fatalf("--version exit %d", code)
	}
	if code, _, errOut := run("version", "extra"); code != cli.ExitUsage || !strings.Contains(errOut, "no arguments") {
		t.Fatalf("version with an argument: %d %q", code, errOut)
	}
}

func TestUsageAndUnknown(t *testing.T) {
	t.Parallel()
	code, _, errOut := run()
	if code != cli.ExitUsage || !strings.Contains(errOut, "Commands:") {
		t.Fatalf("no args: %d %q", code, errOut)
	}
	code, _, errOut = run("teleport")
	if code != cli.ExitUsage || !strings.Contains(errOut, `unknown command "teleport"`) {
		t.Fatalf("unknown: %d %q", code, errOut)
	}
	code, out, _ := run("help")
	if code != cli.ExitOK || !strings.Contains(out, "version") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, _ := run("help", "nope"); code != cli.ExitUsage {
		t.Fatalf("help nope: %d", code)
	}
	for _, cmd := range []string{"search", "mcp"} {
		if code, _, errOut := run("help", cmd); code != cli.ExitOK || !strings.Contains(errOut, "Usage: ferry "+cmd) || !strings.Contains(errOut, "Flags:") {
			t.Fatalf("help %s: %d %q", cmd, code, errOut)
		}
		if code, _, errOut := run(cmd, "--no-such-flag"); code != cli.ExitUsage || !strings.Contains(errOut, "no-such-flag") {
			t.Fatalf("%s with a bad flag: %d %q", cmd, code, errOut)
		}
	}
}

// TestBinary builds the real binary and runs it, as a user would.
func TestBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/ferry-dev/ferry/internal/version.Version=v9.8.7", "-o", bin, "../../cmd/ferry")
	build.Env = os.Environ()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "ferry v9.8.7\nprotocol 1") {
		t.Fatalf("binary version output %q", out)
	}
	err = exec.Command(bin, "bogus").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitUsage {
		t.Fatalf("unknown command exit: %v", err)
	}
}

func runIn(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, args)
	return code, out.String(), errb.String()
}

func TestSearchStdin(t *testing.T) {
	t.Parallel()
	list := "router/middleware/auth.ts\nweb/router.ts\nstore/store_test.go\ndocs/readme.md\n"
	code, out, errOut := runIn(list, "search", "--stdin", "router")
	if code != cli.ExitOK || out != "web/router.ts\nrouter/middleware/auth.ts\n" {
		t.Fatalf("router: %d %q %q", code, out, errOut)
	}
	if code, out, _ = runIn(list, "search", "--stdin", "test", "store"); code != cli.ExitOK || out != "store/store_test.go\n" {
		t.Fatalf("test store: %d %q", code, out)
	}
	code, out, _ = runIn(list, "search", "--stdin", "--json", "--limit", "1", "READ")
	if code != cli.ExitOK || !strings.Contains(out, `"path": "docs/readme.md"`) || !strings.Contains(out, `"match_ranges"`) || !strings.Contains(out, `"truncated": false`) {
		t.Fatalf("--json READ: %d %q", code, out)
	}
	if code, _, errOut = runIn(list, "search", "--stdin", "--limit", "99", "x"); code != cli.ExitUsage || !strings.Contains(errOut, "--limit") {
		t.Fatalf("--limit 99: %d %q", code, errOut)
	}
	if code, _, errOut = runIn(list, "search", "--stdin", "--exclude", "[bad", "x"); code == cli.ExitOK || !strings.Contains(errOut, "exclude_patterns") {
		t.Fatalf("bad --exclude: %d %q", code, errOut)
	}
}

func TestSearchDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"pkg/store/store.go", "pkg/store/store_test.go", "vendor/x/store.go", "README.md"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("vendor/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runIn("", "search", "--dir", dir, "--ext", ".go", "store")
	if code != cli.ExitOK || out != "pkg/store/store.go\npkg/store/store_test.go\n" {
		t.Fatalf("search --dir: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = runIn("", "search", "--dir", filepath.Join(dir, "missing"), "x"); code != cli.ExitError || errOut == "" {
		t.Fatalf("missing dir: %d %q", code, errOut)
	}
}
