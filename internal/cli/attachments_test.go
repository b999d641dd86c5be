package cli_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/binarytest"
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

// TestPushFlags: --push-contact refuses what is not a contact, and help
// shows both push flags on serve and up only.
func TestPushFlags(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "up"} {
		for _, val := range []string{"ops@example.com", "http://example.com", "mailto:"} {
			code, _, errOut := run(cmd, "--addr", "127.0.0.1:0", "--push-contact", val)
			if code != cli.ExitUsage || !strings.Contains(errOut, "--push-contact") {
				t.Errorf("ferry %s --push-contact %s: exit %d, stderr %q; want a usage error", cmd, val, code, errOut)
			}
		}
		if _, _, errOut := run("help", cmd); !strings.Contains(errOut, "-push-contact CONTACT") || !strings.Contains(errOut, "-push-allow-loopback") {
			t.Errorf("ferry help %s does not show the push flags: %q", cmd, errOut)
		}
	}
	if _, _, errOut := run("help", "connect"); strings.Contains(errOut, "-push-contact") {
		t.Error("ferry help connect shows a master flag")
	}
}

// TestMaxUploadReachesTheMaster: a real `ferry up --max-upload 1` refuses
// a browser's 2 MiB upload (413, coded, nothing stored) and takes a small
// one: the flag reaches the master.
func TestMaxUploadReachesTheMaster(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	u := startUpProcess(t, bin, "", nil, "--agent", "echo", "--max-upload", "1")
	token := u.uiToken(t, bin)
	sessionID, _ := u.dialUI(t, token).echoTurn("hi")
	post := func(size int) (int, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("file", "log.txt")
		_, _ = fw.Write(bytes.Repeat([]byte("a"), size))
		_ = mw.Close()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, u.base+"/v1/sessions/"+sessionID+"/uploads", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := post(2 << 20); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"code":"invalid_value"`) {
		t.Fatalf("2 MiB under --max-upload 1: HTTP %d %s", status, body)
	}
	if status, body := post(100 << 10); status != http.StatusCreated || !strings.Contains(body, `"mime_type":"text/plain"`) {
		t.Fatalf("100 KiB: HTTP %d %s", status, body)
	}
}
