package cli_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/qrterm/qrtermtest"
)

// openPTY opens a pseudo-terminal pair: the program writes to tty, the test
// reads what a terminal would show from pty.
func openPTY(t *testing.T) (pty, tty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here (/dev/ptmx: %v)", err)
	}
	t.Cleanup(func() { _ = pty.Close() })
	if err := unix.IoctlSetPointerInt(int(pty.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(pty.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open tty: %v", err)
	}
	t.Cleanup(func() { _ = tty.Close() })
	return pty, tty
}

// TestUpPrintsLoginQROnATerminal: `ferry up` with its stdout a terminal
// draws the login URL as a QR code under it, which decodes to that URL;
// with its stdout a pipe it prints the URL alone (a log stays readable).
func TestUpPrintsLoginQROnATerminal(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	urlRE := regexp.MustCompile(`https?://\S+/login\?token=ferry_login_[A-Za-z0-9_-]+`)
	start := func(stdout *os.File) (*exec.Cmd, func()) {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		cmd := exec.CommandContext(ctx, bin, "up", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "f.db"),
			"--state", filepath.Join(dir, "state"), "--workspace", dir, "--agent", "echo")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		cmd.Stdout = stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); cancel() }
	}

	t.Run("terminal", func(t *testing.T) {
		pty, tty := openPTY(t)
		_, stop := start(tty)
		defer stop()
		lines := make(chan string, 256)
		go func() {
			sc := bufio.NewScanner(pty)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var b strings.Builder
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("ferry up's terminal closed:\n%s", b.String())
				}
				b.WriteString(l + "\n")
			case <-deadline:
				t.Fatalf("no QR code within 60s:\n%s", b.String())
			}
			out := b.String()
			// The code is whole once a line without colour follows it.
			if i := strings.LastIndex(out, "\x1b[0m"); i < 0 || !strings.Contains(out[i:], "\n\n") {
				continue
			}
			url := urlRE.FindString(out)
			got, err := qrtermtest.Decode(out)
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, out)
			}
			if url == "" || got != url {
				t.Fatalf("the QR code reads %q, the URL printed is %q", got, url)
			}
			return
		}
	})

	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = r.Close() }()
		_, stop := start(w)
		_ = w.Close()
		defer stop()
		var b strings.Builder
		sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
		seen := 0
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if seen > 0 {
				seen++
			}
			if urlRE.MatchString(sc.Text()) {
				seen = 1
			}
			if seen > 4 {
				break
			}
		}
		if !urlRE.MatchString(b.String()) {
			t.Fatalf("no login URL:\n%s", b.String())
		}
		if strings.Contains(b.String(), "\x1b[") || strings.ContainsAny(b.String(), "▀▄█") {
			t.Errorf("ferry up drew a QR code into a pipe:\n%s", b.String())
		}
	})
}
