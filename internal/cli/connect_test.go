package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/cli"
)

// refusingMaster answers every client dial with 401 and records the
// Authorization header it got.
func refusingMaster(t *testing.T) (url string, auth <-chan string) {
	t.Helper()
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("Authorization"):
		default:
		}
		http.Error(w, `{"code":"unauthorized"}`, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// connect runs `ferry connect` against master with env and args.
func connect(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	env["HOME"] = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	args = append([]string{"connect", "--state", filepath.Join(t.TempDir(), "state"), "--workspace", t.TempDir(), "--agent", "echo"}, args...)
	code := cli.Run(ctx, cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}, args)
	if ctx.Err() != nil {
		t.Fatalf("ferry connect %v did not stop on a refused token", args)
	}
	return code, errb.String()
}

func tokenFile(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// TestConnectTokenSources: the client token comes from $FERRY_TOKEN,
// --token-file (trimmed) or --token, which warns that argv is visible to
// every local user (issue 16 item 9). A refused token stops connect at
// once with exit 1 and what to do.
func TestConnectTokenSources(t *testing.T) {
	t.Parallel()
	const argvWarning = "visible to every user of this machine"
	for _, c := range []struct {
		name      string
		env       map[string]string
		args      func(t *testing.T) []string
		want      string
		warnings  []string
		noWarning []string
	}{
		{"env", map[string]string{"FERRY_TOKEN": " ferry_client_env\n"}, func(*testing.T) []string { return nil },
			"ferry_client_env", nil, []string{argvWarning, "WARNING", "other users"}},
		{"file", nil, func(t *testing.T) []string {
			return []string{"--token-file", tokenFile(t, "ferry_client_file\n", 0o600)}
		},
			"ferry_client_file", nil, []string{argvWarning, "WARNING", "other users"}},
		{"file beats env", map[string]string{"FERRY_TOKEN": "ferry_client_env"},
			func(t *testing.T) []string { return []string{"--token-file", tokenFile(t, "ferry_client_file", 0o400)} },
			"ferry_client_file", nil, []string{argvWarning}},
		{"readable file", nil, func(t *testing.T) []string { return []string{"--token-file", tokenFile(t, "ferry_client_file", 0o644)} },
			"ferry_client_file", []string{"can be read by other users (mode 0644)", "chmod 600"}, []string{argvWarning}},
		{"argv", nil, func(*testing.T) []string { return []string{"--token", "ferry_client_argv"} },
			"ferry_client_argv", []string{argvWarning, "$FERRY_TOKEN or --token-file"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, auth := refusingMaster(t)
			code, errOut := connect(t, c.env, append([]string{"--master", url}, c.args(t)...)...)
			if code != cli.ExitError || !strings.Contains(errOut, "the master refused the client token") || !strings.Contains(errOut, "ferry token create") {
				t.Fatalf("exit %d, stderr %q; want exit 1 and what to do", code, errOut)
			}
			if got := <-auth; got != "Bearer "+c.want {
				t.Errorf("sent %q, want the token %q", got, c.want)
			}
			for _, w := range c.warnings {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			for _, w := range c.noWarning {
				if strings.Contains(errOut, w) {
					t.Errorf("stderr %q has %q", errOut, w)
				}
			}
		})
	}
}

// TestConnectTokenFileErrors: a token file that cannot give a token is a
// usage error that says why, before anything dials.
func TestConnectTokenFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args func(t *testing.T) []string
		want string
	}{
		{"missing", func(*testing.T) []string { return []string{"--token-file", filepath.Join(dir, "nope")} }, "no such file"},
		{"empty", func(t *testing.T) []string { return []string{"--token-file", tokenFile(t, " \n\n", 0o600)} }, "is empty"},
		{"two lines", func(t *testing.T) []string { return []string{"--token-file", tokenFile(t, "a\nb\n", 0o600)} }, "one token on one line"},
		{"directory", func(*testing.T) []string { return []string{"--token-file", dir} }, "not a regular file"},
		{"huge", func(t *testing.T) []string {
			return []string{"--token-file", tokenFile(t, strings.Repeat("x", 5000), 0o600)}
		}, "too large"},
		{"both", func(t *testing.T) []string {
			return []string{"--token", "x", "--token-file", tokenFile(t, "y", 0o600)}
		}, "not both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, errOut := connect(t, map[string]string{"FERRY_TOKEN": "ferry_client_env"}, append([]string{"--master", "http://127.0.0.1:1"}, c.args(t)...)...)
			if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr %q; want a usage error with %q", code, errOut, c.want)
			}
		})
	}
}

// TestServeLoopbackNoWarning: on loopback (the default) serve prints no
// plain-HTTP warning.
func TestServeLoopbackNoWarning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, cli.Env{Stdout: out, Stderr: errb, Getenv: func(k string) string { return map[string]string{"HOME": dir}[k] }},
			[]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "ferry.db")})
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "/login?token="); {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %q %q", out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), "WARNING") {
		t.Fatalf("serve on loopback warns: %q", errb.String())
	}
}
