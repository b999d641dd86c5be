package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary be the launcher (as the command is) and
// a stand-in MCP server for the tests below.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == childArg {
		runChild(os.Args[2])
		return
	}
	if len(os.Args) == 2 && strings.HasPrefix(os.Args[1], "fake-mcp=") {
		fakeMCP(strings.TrimPrefix(os.Args[1], "fake-mcp="))
		return
	}
	os.Exit(m.Run())
}

// fakeMCP reads the initialize request and answers as mode says, then
// waits for the end of its standard input.
func fakeMCP(mode string) {
	in := bufio.NewReader(os.Stdin)
	line, _ := in.ReadString('\n')
	if !strings.Contains(line, `"method":"initialize"`) {
		os.Exit(3)
	}
	switch mode {
	case "ok":
		fmt.Println(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
		fmt.Println(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"fake","version":"0"}}}`)
	case "error":
		fmt.Println(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unsupported"}}`)
	case "silent":
		os.Exit(0)
	}
	for {
		if _, err := in.ReadByte(); err != nil {
			return
		}
	}
}

func testHarness(t *testing.T) *harness {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env, err := childEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{o: options{runs: 3}, env: env, self: exe}
}

// TestPeakRSSNotTheBenchmarks: a child's ru_maxrss must not include the
// benchmark's own memory (Linux folds the parent's peak in at
// vfork+exec). The test process holds 256 MiB and measures /bin/true.
func TestPeakRSSNotTheBenchmarks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ru_maxrss semantics are Linux's")
	}
	h := testHarness(t)
	held := make([]byte, 256<<20)
	for i := 0; i < len(held); i += 4096 {
		held[i] = 1
	}
	s, err := h.launch(context.Background(), spec{Bin: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if s.rss <= 0 || s.rss > 32<<20 {
		t.Errorf("/bin/true's peak RSS read %d MiB with 256 MiB held by the benchmark; want a few MiB", s.rss>>20)
	}
	if h.launcherPeak <= 0 || h.launcherPeak > 32<<20 {
		t.Errorf("launcher peak %d bytes", h.launcherPeak)
	}
	if s.wall <= 0 || s.wall > time.Minute {
		t.Errorf("wall %v", s.wall)
	}
	runtime.KeepAlive(held)
}

func TestLaunchErrors(t *testing.T) {
	h := testHarness(t)
	ctx := context.Background()
	if _, err := h.launch(ctx, spec{Bin: "/bin/false"}); err != nil {
		t.Errorf("exit status 1 (fzf's no match) refused: %v", err)
	}
	for _, c := range []struct {
		sp   spec
		want string
	}{
		{spec{Bin: "/bin/sh", Args: []string{"-c", "echo oops >&2; exit 2"}}, "oops"},
		{spec{Bin: "/nonexistent/ferry"}, "/nonexistent/ferry"},
		{spec{Bin: "/bin/cat", Stdin: "/nonexistent/list.txt"}, "open /nonexistent/list.txt"},
	} {
		if _, err := h.launch(ctx, c.sp); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("launch(%+v) = %v, want an error naming %q", c.sp, err, c.want)
		}
	}
}

// TestMCPInitialize drives a real child speaking MCP over stdio: this
// test binary in its fake-mcp mode.
func TestMCPInitialize(t *testing.T) {
	h := testHarness(t)
	ctx := context.Background()
	s, err := h.launch(ctx, spec{Kind: kindMCP, Bin: h.self, Args: []string{"fake-mcp=ok"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.wall <= 0 || s.rss <= 0 || s.anon <= 0 || s.file <= 0 {
		t.Errorf("sample %+v: want wall, peak RSS and the live RSS split", s)
	}
	for mode, want := range map[string]string{
		"error":  "unsupported",
		"silent": "no initialize response",
	} {
		if _, err := h.launch(ctx, spec{Kind: kindMCP, Bin: h.self, Args: []string{"fake-mcp=" + mode}}); err == nil ||
			!strings.Contains(err.Error(), want) {
			t.Errorf("fake-mcp=%s: %v, want an error naming %q", mode, err, want)
		}
	}
}

// TestRoundsRotate: each round starts with the next command, so every
// command runs first, second and third equally often.
func TestRoundsRotate(t *testing.T) {
	h := testHarness(t)
	var order []string
	var cmds []command
	for _, name := range []string{"a", "b", "c"} {
		cmds = append(cmds, command{name: name, run: func(context.Context) (sample, error) {
			order = append(order, name)
			return sample{wall: time.Millisecond}, nil
		}})
	}
	res, err := h.rounds(context.Background(), "test", cmds)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "b", "c", "a", "c", "a", "b"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	for i, r := range res {
		if len(r) != 3 {
			t.Errorf("command %d has %d samples", i, len(r))
		}
	}
}

func TestMedian(t *testing.T) {
	ss := func(ms ...int) []sample {
		var out []sample
		for _, m := range ms {
			out = append(out, sample{wall: time.Duration(m) * time.Millisecond})
		}
		return out
	}
	if got := median(ss(30, 10, 20), wallOf); got != 20e6 {
		t.Errorf("odd median %v", got)
	}
	if got := median(ss(40, 10, 30, 20), wallOf); got != 25e6 {
		t.Errorf("even median %v", got)
	}
}
