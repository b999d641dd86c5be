package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/tools"
)

// testServer is the built testdata/testserver, or "" with buildErr.
var (
	testServer string
	buildErr   error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpclient-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServer = filepath.Join(dir, "testserver")
	if goCmd, err := exec.LookPath("go"); err != nil {
		buildErr = fmt.Errorf("no go command to build the test server with (install Go 1.26): %w", err)
	} else if out, err := exec.Command(goCmd, "build", "-o", testServer, "./testdata/testserver").CombinedOutput(); err != nil { //nolint:gosec // the go found on PATH, building this module
		buildErr = fmt.Errorf("go build ./testdata/testserver: %w\n%s", err, out)
	}
	code := binarytest.Main(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// stdio is a stdio server running the test server in mode.
func stdio(t *testing.T, name string, args ...string) Server {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return Server{Name: name, Command: testServer, Args: args}
}

// connect connects servers and closes the Set when the test ends.
func connect(t *testing.T, servers []Server, opts Options) *Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := Connect(ctx, servers, opts)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// tool finds a tool of s by name.
func tool(t *testing.T, s *Set, name string) tools.Tool {
	t.Helper()
	var names []string
	for _, tl := range s.Tools() {
		if tl.Name() == name {
			return tl
		}
		names = append(names, tl.Name())
	}
	t.Fatalf("no tool %s among %v (status %+v)", name, names, s.Status())
	return nil
}

// run calls a tool with input, as the agent does.
func run(t *testing.T, s *Set, name string, input any) (*tools.Result, error) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Through the one invocation point the agent uses.
	return tools.Invoke(ctx, &tools.Env{}, tool(t, s, name), "toolu_test", raw)
}

// text is the joined text of a result.
func text(r *tools.Result) string {
	var b strings.Builder
	for _, bl := range r.Blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// wantCode checks that err is a *tools.Error of code whose message holds
// every one of parts, and returns the message.
func wantCode(t *testing.T, err error, code int, parts ...string) string {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a tools.Error of code %d", err, code)
	}
	if te.Code != code {
		t.Fatalf("code %d (%s), want %d", te.Code, te.Message, code)
	}
	for _, p := range parts {
		if !strings.Contains(te.Message, p) {
			t.Errorf("message %q lacks %q", te.Message, p)
		}
	}
	return te.Message
}

// status is the status of the server named name.
func status(t *testing.T, s *Set, name string) ServerStatus {
	t.Helper()
	for _, st := range s.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for %s in %+v", name, s.Status())
	return ServerStatus{}
}
