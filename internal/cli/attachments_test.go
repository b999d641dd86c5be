package cli_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/master/upload/uploadtest"
	"github.com/ferry-dev/ferry/protocol"
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

// TestStalledUploadsDoNotLockOutUploads (issue 31, item 1.2): against a
// real `ferry up` over real sockets, two logins each start two uploads
// that send a Content-Length of 1 MB and then a byte every 5 s. They
// cannot hold the four receive slots: a third such upload of one login is
// answered 503 busy (its own bound), a third login's normal upload is
// answered 503 busy with Retry-After (the global bound) within seconds,
// never left hanging; the stalled ones are cut (408) once they fall below
// the minimum rate, and the third login's upload, retried as Retry-After
// says, is then stored. All of it within 60 s. Before, the stalled
// uploads held their slots for as long as they trickled, and the others
// got no answer at all.
func TestStalledUploadsDoNotLockOutUploads(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	start := time.Now()
	u := startUpProcess(t, bin, "", nil, "--agent", "echo")
	tokA, tokB, tokC := u.uiToken(t, bin), u.uiToken(t, bin), u.uiToken(t, bin)
	sessionID, _ := u.dialUI(t, tokA).echoTurn("hi")
	target := u.base + "/v1/sessions/" + sessionID + "/uploads"
	auth := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	begun := time.Now()

	var stalled []<-chan uploadtest.Answer
	for _, tok := range []string{tokA, tokA, tokB, tokB} {
		stalled = append(stalled, uploadtest.Slow(t, target, auth(tok), 1, 5*time.Second, 0))
	}
	time.Sleep(500 * time.Millisecond) // they have their slots
	third := uploadtest.Slow(t, target, auth(tokA), 1, 5*time.Second, 0)
	busy := func(a uploadtest.Answer) bool {
		return a.Status == http.StatusServiceUnavailable && a.Code == protocol.CodeBusy && a.RetryAfter != "" && a.After < 15*time.Second
	}
	if a := uploadtest.Quick(t, target, auth(tokC)); !busy(a) {
		t.Fatalf("a normal upload while four stalled ones are in: %+v, want 503 busy with Retry-After within seconds", a)
	}
	if a := uploadtest.Wait(t, third, 20*time.Second, "a login's third upload"); !busy(a) {
		t.Errorf("a login's third stalled upload: %+v, want 503 busy with Retry-After within seconds", a)
	}

	// Retried as Retry-After says, the normal upload gets in once the
	// stalled ones are cut.
	var got uploadtest.Answer
	for tries := 0; time.Since(begun) < 45*time.Second; tries++ {
		got = uploadtest.Quick(t, target, auth(tokC))
		if got.Status != http.StatusServiceUnavailable {
			t.Logf("the normal upload got in after %d busy answers, %v after the stalled ones began", tries+1, time.Since(begun).Round(time.Second))
			break
		}
		secs, err := strconv.Atoi(got.RetryAfter)
		if err != nil || secs < 1 || secs > 30 {
			t.Fatalf("Retry-After %q", got.RetryAfter)
		}
		time.Sleep(time.Duration(secs) * time.Second)
	}
	if got.Status != http.StatusCreated {
		t.Fatalf("the normal upload, retried: %+v, want 201", got)
	}
	for i, ch := range stalled {
		a := uploadtest.Wait(t, ch, 20*time.Second, "a stalled upload")
		if a.Status != http.StatusRequestTimeout || a.Code != protocol.CodeInvalidValue || a.After > 30*time.Second {
			t.Errorf("stalled upload %d: %+v, want 408 invalid_value", i+1, a)
		}
	}
	d := time.Since(start)
	t.Logf("%v from ferry up's start to the end", d.Round(100*time.Millisecond))
	if d > 60*time.Second {
		t.Errorf("the test took %v, more than 60 s", d)
	}
}
