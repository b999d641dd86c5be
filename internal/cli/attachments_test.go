package cli_test

import (
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/cli"
)

// TestAttachmentFlags: --max-upload refuses what it cannot mean on serve
// and up, and help shows it and --fetch-attachment-urls where they apply.
func TestAttachmentFlags(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "up"} {
		for _, val := range []string{"0", "-3", "21"} {
			code, _, errOut := run(cmd, "--addr", "127.0.0.1:0", "--max-upload", val)
			if code != cli.ExitUsage || !strings.Contains(errOut, "--max-upload "+val+": must be 1 to 20 MiB") {
				t.Errorf("ferry %s --max-upload %s: exit %d, stderr %q; want a usage error", cmd, val, code, errOut)
			}
		}
		if _, _, errOut := run("help", cmd); !strings.Contains(errOut, "-max-upload MiB") || !strings.Contains(errOut, "(default 20)") {
			t.Errorf("ferry help %s does not show --max-upload and its default: %q", cmd, errOut)
		}
	}
	for _, cmd := range []string{"connect", "up"} {
		if _, _, errOut := run("help", cmd); !strings.Contains(errOut, "-fetch-attachment-urls") {
			t.Errorf("ferry help %s does not show --fetch-attachment-urls", cmd)
		}
	}
	if _, _, errOut := run("help", "serve"); strings.Contains(errOut, "-fetch-attachment-urls") {
		t.Error("ferry help serve shows a client flag")
	}
}
