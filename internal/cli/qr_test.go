package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/qrterm/qrtermtest"
)

// TestTokenCreateQR: `ferry token create --kind login --qr`, run as the real
// binary with its stdout a pipe (not a terminal), prints a QR code that an
// independent decoder reads back as the login URL it printed.
func TestTokenCreateQR(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	db := filepath.Join(t.TempDir(), "f.db")
	for _, master := range []string{"", "https://laptop.tail1234.ts.net"} {
		args := []string{"token", "create", "--kind", "login", "--qr", "--db", db}
		if master != "" {
			args = append(args, "--master", master)
		}
		out := ferryCmd(t, bin, args...)
		url := regexp.MustCompile(`(?m)^https?://\S+/login\?token=ferry_login_\S+$`).FindString(out)
		if url == "" {
			t.Fatalf("no login URL in:\n%s", out)
		}
		if master != "" && !strings.HasPrefix(url, master+"/login?") {
			t.Errorf("URL %q is not on --master %s", url, master)
		}
		got, err := qrtermtest.Decode(out)
		if err != nil {
			t.Fatalf("decode the QR code: %v\n%s", err, out)
		}
		if got != url {
			t.Errorf("the QR code reads %q, the URL printed is %q", got, url)
		}
		if loopback := strings.Contains(out, "is this computer: a phone cannot open it"); loopback != (master == "") {
			t.Errorf("--master %q: the loopback note is there: %v\n%s", master, loopback, out)
		}
	}
	// Without --qr, no drawing: the output stays two lines a script reads.
	out := ferryCmd(t, bin, "token", "create", "--kind", "login", "--db", db)
	if strings.Contains(out, "\x1b[") || strings.Count(out, "\n") != 2 {
		t.Errorf("token create without --qr printed more than the secret and URL:\n%q", out)
	}
}

// TestTokenCreateQRNeedsLogin: --qr on a token with no login URL is a usage
// error naming the fix, before any database is opened or created.
func TestTokenCreateQRNeedsLogin(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "f.db")
	for _, kind := range []string{"client", "ui"} {
		code, stdout, stderr := run("token", "create", "--kind", kind, "--qr", "--db", db)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "--qr draws a login URL; a "+kind+" token has none (add --kind login)") {
			t.Errorf("--kind %s --qr: exit %d, stdout %q, stderr %q", kind, code, stdout, stderr)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused --qr touched the database: %v", err)
	}
}
