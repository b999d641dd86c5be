package cli_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// TestServeDrainsOnSIGTERM: a real ferry serve, its metrics address and
// drain timeout from the environment, serves metrics that count a
// client's connection; on SIGTERM it closes that connection with 1012
// and the drain's reason, and exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	login := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/login\?token=`)
	db := filepath.Join(t.TempDir(), "ferry.db")
	metricsAddr := "127.0.0.1:" + strconv.Itoa(natstest.FreePort(t))
	srv := startStopProc(t, bin, []string{"FERRY_METRICS_ADDR=" + metricsAddr, "FERRY_DRAIN_TIMEOUT=20s"}, login,
		"serve", "--addr", "127.0.0.1:0", "--db", db)
	base := login.FindStringSubmatch(srv.out.String())[1]
	token := strings.TrimSpace(ferryCmd(t, bin, "token", "create", "--db", db))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/client",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ws.CloseNow() }()
	caps, err := protocol.Encode(protocol.New(protocol.TypeCapabilities, &protocol.Capabilities{
		ProtocolVersion: 1, Client: protocol.ClientInfo{Name: "test", Version: "0"},
		Machine:    &protocol.MachineInfo{ID: "m1", Name: "laptop"},
		Workspaces: []protocol.Workspace{{ID: "ws1", Name: "proj", Path: "/tmp/proj"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, caps); err != nil {
		t.Fatal(err)
	}
	// The metrics listener counts the connection (the gauge moves as soon
	// as it is registered; the scrape is retried until then).
	want := `ferry_connections{role="client"} 1`
	for body := ""; !strings.Contains(body, want); {
		body = get(t, ctx, "http://"+metricsAddr+"/metrics")
		if ctx.Err() != nil {
			t.Fatalf("the metrics never said %s: %s", want, body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		_, _, err := ws.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusServiceRestart || ce.Reason != master.DrainReason {
			t.Fatalf("the connection ended with %v, want 1012 %q", err, master.DrainReason)
		}
		break
	}
	select {
	case <-srv.done:
	case <-ctx.Done():
		t.Fatal("ferry serve did not exit after draining")
	}
	if code := srv.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("ferry serve exited %d: %s", code, srv.errb.String())
	}
}

// get returns the body of GET url ("" when it fails).
func get(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
