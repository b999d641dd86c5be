// Package natstest runs a real nats-server process for tests: on
// 127.0.0.1, a free port and its own temp dir, stopped at cleanup. The
// binary is $FERRY_TEST_NATS_SERVER or nats-server on PATH; without it a
// test skips naming the install step, or fails under FERRY_REQUIRE_NATS=1.
package natstest

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// InstallHint is how to get the server the tests run against.
const InstallHint = "go install github.com/nats-io/nats-server/v2@v2.15.2 (then put it on PATH or set FERRY_TEST_NATS_SERVER)"

// Server is a real nats-server process on 127.0.0.1, in its own temp dir,
// stopped at cleanup.
type Server struct {
	// Port is the server's port on 127.0.0.1; it stays across Kill and Start.
	Port int

	t    testing.TB
	bin  string
	dir  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// serverBinary finds nats-server: $FERRY_TEST_NATS_SERVER, else PATH. The
// tests skip without it unless FERRY_REQUIRE_NATS=1 (set in CI so that a
// missing server fails).
func serverBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FERRY_TEST_NATS_SERVER"); p != "" {
		return p
	}
	p, err := exec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("FERRY_REQUIRE_NATS") == "1" {
			t.Fatal("FERRY_REQUIRE_NATS=1 but nats-server is not found: " + InstallHint)
		}
		t.Skip("nats-server not found: " + InstallHint)
	}
	return p
}

// Start starts nats-server with extra args (e.g. --user, --pass) and waits
// until it accepts clients.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, bin: serverBinary(t), dir: t.TempDir(), Port: FreePort(t), args: extra}
	s.Start()
	t.Cleanup(s.stop)
	return s
}

// FreePort returns a port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// URL is the server's client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port) }

// Start runs the server again on the same port (after Kill) and waits
// until it greets a client.
func (s *Server) Start() {
	t := s.t
	t.Helper()
	args := append([]string{"-a", "127.0.0.1", "-p", strconv.Itoa(s.Port),
		"-l", filepath.Join(s.dir, "nats.log")}, s.args...)
	cmd := exec.Command(s.bin, args...) //nolint:gosec // the test environment names the binary
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if greets(s.Port) {
			return
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "nats.log"))
			t.Fatalf("nats-server exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("nats-server did not accept connections within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// greets reports whether a NATS server answers on port with its INFO line.
func greets(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "INFO ")
}

// Kill ends the server abruptly (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Within fails the test unless fn returns within d, and returns its error.
func Within(t testing.TB, d time.Duration, what string, fn func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
		return errors.New("unreachable")
	}
}
