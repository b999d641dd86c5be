package cli

import (
	"fmt"
	"io"
	neturl "net/url"
	"os"

	"golang.org/x/term"

	"github.com/ferry-dev/ferry/internal/qrterm"
)

// isTerminal reports whether w is a terminal: ferry up draws the login QR
// code only there, so a log file or a pipe gets the URL alone.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printQR draws url as a QR code, indented as the URL above it is, then a
// blank line; under a URL that names this computer, a line saying a phone
// cannot open it.
func printQR(w io.Writer, url string) error {
	if err := qrterm.Write(w, url, "    "); err != nil {
		return fmt.Errorf("draw the login QR code: %w", err)
	}
	if u, err := neturl.Parse(url); err == nil && isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(w, "    (%s is this computer: a phone cannot open it; to reach ferry from one, see docs/reach.md)\n", u.Host)
	}
	_, err := fmt.Fprintln(w)
	return err
}
