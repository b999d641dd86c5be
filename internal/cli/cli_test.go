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
}

// TestBinary builds the real binary and runs it, as a user would.
func TestBinary(t *testing.T) {
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
