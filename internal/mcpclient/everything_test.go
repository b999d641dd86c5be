package mcpclient

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/tools"
)

// everything is the reference server of the MCP project (TypeScript SDK),
// @modelcontextprotocol/server-everything, pinned where it is installed.
func everything(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("FERRY_TEST_MCP_EVERYTHING")
	if bin == "" {
		t.Skip("set FERRY_TEST_MCP_EVERYTHING to mcp-server-everything: npm install --prefix DIR @modelcontextprotocol/server-everything@2026.8.31, then DIR/node_modules/.bin/mcp-server-everything")
	}
	return bin
}

// TestServerEverything: ferry's client against a server written elsewhere
// (the TypeScript SDK's reference server over stdio): its tools are listed
// with their read-only hints, and text, image, resource link, embedded
// resource and structured results convert; a long operation times out.
func TestServerEverything(t *testing.T) {
	bin := everything(t)
	t.Run("stdio", func(t *testing.T) {
		testEverything(t, Server{Name: "everything", Command: bin, Args: []string{"stdio"}})
	})
	t.Run("http", func(t *testing.T) {
		testEverything(t, Server{Name: "everything", URL: everythingHTTP(t, bin)})
	})
}

// everythingHTTP starts the server's streamable-HTTP transport on a free
// loopback port and returns its URL.
func everythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_ = ln.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(listening)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case <-listening:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not start listening")
	}
	return "http://127.0.0.1:" + port + "/mcp"
}

func testEverything(t *testing.T, srv Server) {
	s := connect(t, []Server{srv}, Options{CallTimeout: 3 * time.Second})
	if st := status(t, s, "everything"); !st.OK || st.Tools < 10 {
		t.Fatalf("status %+v", st)
	}
	if !tool(t, s, "mcp__everything__echo").ReadOnly() || tool(t, s, "mcp__everything__toggle-simulated-logging").ReadOnly() {
		t.Error("read-only hints not kept")
	}
	check := func(name string, input any, want ...string) *tools.Result {
		t.Helper()
		res, err := run(t, s, name, input)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, w := range want {
			if !strings.Contains(text(res), w) {
				t.Errorf("%s: %q lacks %q", name, text(res), w)
			}
		}
		return res
	}
	check("mcp__everything__echo", map[string]any{"message": "hi there"}, "hi there")
	check("mcp__everything__get-sum", map[string]any{"a": 2, "b": 3}, "5")
	if res := check("mcp__everything__get-tiny-image", nil); countImages(res) != 1 {
		t.Errorf("tiny image: %+v", res.Blocks)
	}
	check("mcp__everything__get-resource-links", map[string]any{"count": 2}, "[resource link ")
	check("mcp__everything__get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1}, "[resource ")
	check("mcp__everything__get-structured-content", map[string]any{"location": "Chicago"}, "temperature")
	_, err := run(t, s, "mcp__everything__trigger-long-running-operation", map[string]any{"duration": 30, "steps": 3})
	wantCode(t, err, tools.CodeTimeout, "did not answer within 3s")
	// Still answering after the cancelled call.
	check("mcp__everything__echo", map[string]any{"message": "after"}, "after")
}
