package cli_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/broker/nats/natstest"
	"github.com/ferry-dev/ferry/internal/cli"
)

// TestServeNATS: ferry serve with FERRY_NATS connects its broker to the
// nats-server (seen in the server's connection list), and a --nats nobody
// answers on stops serve with an error naming the flag.
func TestServeNATS(t *testing.T) {
	t.Parallel()
	monitor := natstest.FreePort(t)
	srv := natstest.Start(t, "-m", strconv.Itoa(monitor))
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errb := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	env := map[string]string{"HOME": dir, "FERRY_NATS": srv.URL()}
	go func() {
		done <- cli.Run(ctx, cli.Env{Stdout: out, Stderr: errb, Getenv: func(k string) string { return env[k] }},
			[]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "ferry.db")})
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "/login?token="); {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %q %q", out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(monitor) + "/connz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), `"name": "ferry serve `) {
		t.Fatalf("nats-server does not list ferry serve's connection: %s", body)
	}
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}

	// Nothing listens on the --nats port: serve fails at start, naming the flag.
	bad := "nats://127.0.0.1:" + strconv.Itoa(natstest.FreePort(t))
	var errOut syncBuffer
	code := cli.Run(context.Background(), cli.Env{Stdout: io.Discard, Stderr: &errOut, Getenv: func(k string) string { return map[string]string{"HOME": dir}[k] }},
		[]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "ferry.db"), "--nats", bad})
	if code == cli.ExitOK || !strings.Contains(errOut.String(), "--nats:") {
		t.Fatalf("serve with an unreachable --nats: exit %d, stderr %q", code, errOut.String())
	}
}
