package claudecode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The test binary doubles as a fake `claude`: run with FERRY_FAKE_CLAUDE set
// it speaks the stream-json and control protocol on stdio the way the real
// CLI does, following a scenario, so the adapter's parser, crash and cancel
// paths can be tested without the real CLI. It appends what it was started
// with and what it got to FERRY_FAKE_LOG.

const (
	envFakeScenario = "FERRY_FAKE_CLAUDE"
	envFakeLog      = "FERRY_FAKE_LOG"
	fakeSessionID   = "fake-session-1"
	// hugeText is the size of the "huge" scenario's text block: the whole
	// assistant line is a little more.
	hugeText = 64 << 20
	// fakePNG is the base64 of a 1×1 PNG the "images" scenario reads.
	fakePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)

func TestMain(m *testing.M) {
	if sc := os.Getenv(envFakeScenario); sc != "" {
		os.Exit(fakeClaude(sc))
	}
	os.Exit(m.Run())
}

// fakeLogEntry is one line of the fake's log.
type fakeLogEntry struct {
	Args []string        `json:"args,omitempty"`
	Dir  string          `json:"dir,omitempty"`
	Got  json.RawMessage `json:"got,omitempty"`
	Note string          `json:"note,omitempty"`
}

type fakeCLI struct {
	out     *bufio.Writer
	mu      sync.Mutex
	log     *os.File
	args    []string
	pending map[string]chan json.RawMessage
}

func (f *fakeCLI) write(v any) {
	b, _ := json.Marshal(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Write(b)
	f.out.WriteByte('\n')
	f.out.Flush()
}

func (f *fakeCLI) raw(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.WriteString(s + "\n")
	f.out.Flush()
}

func (f *fakeCLI) note(e fakeLogEntry) {
	if f.log == nil {
		return
	}
	b, _ := json.Marshal(e)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log.Write(append(b, '\n'))
}

func (f *fakeCLI) hasArg(prefix string) bool {
	for _, a := range f.args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

func (f *fakeCLI) assistant(id string, blocks ...map[string]any) {
	f.write(map[string]any{"type": "assistant", "session_id": fakeSessionID, "parent_tool_use_id": nil,
		"message": map[string]any{"id": id, "role": "assistant", "model": "fake-model", "content": blocks}})
}

func (f *fakeCLI) result(subtype, text string, cost float64) {
	f.write(map[string]any{"type": "result", "subtype": subtype, "is_error": subtype != "success", "result": text,
		"session_id": fakeSessionID, "total_cost_usd": cost, "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
}

// request sends a control request to ferry and waits for its response.
func (f *fakeCLI) request(id string, body map[string]any) json.RawMessage {
	ch := make(chan json.RawMessage, 1)
	f.mu.Lock()
	f.pending[id] = ch
	f.mu.Unlock()
	f.write(map[string]any{"type": "control_request", "request_id": id, "request": body})
	return <-ch
}

func fakeClaude(scenario string) int {
	f := &fakeCLI{out: bufio.NewWriterSize(os.Stdout, 1<<20), args: os.Args[1:], pending: map[string]chan json.RawMessage{}}
	if p := os.Getenv(envFakeLog); p != "" {
		f.log, _ = os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	}
	dir, _ := os.Getwd()
	f.note(fakeLogEntry{Args: f.args, Dir: dir})
	if scenario == "noresume" && f.hasArg("--resume=") {
		fmt.Fprintln(os.Stderr, "No conversation found with session ID: x")
		f.result("error_during_execution", "", 0)
		return 1
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	turns := 0
	for {
		b, err := in.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			return 0 // stdin closed: exit as the CLI does
		}
		var msg struct {
			Type      string          `json:"type"`
			RequestID string          `json:"request_id"`
			Request   json.RawMessage `json:"request"`
			Response  struct {
				RequestID string          `json:"request_id"`
				Response  json.RawMessage `json:"response"`
			} `json:"response"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			f.note(fakeLogEntry{Note: "bad input: " + string(b)})
			continue
		}
		f.note(fakeLogEntry{Got: json.RawMessage(b)})
		switch msg.Type {
		case "control_response":
			f.mu.Lock()
			ch := f.pending[msg.Response.RequestID]
			f.mu.Unlock()
			if ch != nil {
				ch <- msg.Response.Response
			}
		case "control_request":
			var req struct {
				Subtype string `json:"subtype"`
				Mode    string `json:"mode"`
			}
			json.Unmarshal(msg.Request, &req)
			if req.Subtype == "interrupt" && scenario == "hang" {
				continue // a CLI that does not react
			}
			if req.Subtype == "generate_session_title" {
				switch scenario {
				case "title-hang":
					continue // a model that never answers
				case "titles":
					f.write(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": msg.RequestID, "response": map[string]any{"title": " Login bug in auth.go "}}})
					continue
				}
			}
			f.write(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": msg.RequestID, "response": map[string]any{"mode": req.Mode}}})
		case "user":
			turns++
			go f.turn(scenario, promptText(msg.Message.Content), turns)
		}
	}
}

// promptText is a user message's text: its string content, or its text
// blocks joined (a prompt with attachments comes as blocks).
func promptText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// turn plays one turn of the scenario.
func (f *fakeCLI) turn(scenario, prompt string, n int) {
	f.write(map[string]any{"type": "system", "subtype": "init", "session_id": fakeSessionID, "model": "fake-model"})
	switch scenario {
	case "titled":
		// Claude Code names the session (session_title_changed), as its
		// SDK host sees after the first exchange.
		f.write(map[string]any{"type": "system", "subtype": "session_title_changed", "session_id": fakeSessionID, "title": "  Fix the\tlogin bug\u202e ", "given_by": "other"})
		f.assistant("m1", map[string]any{"type": "text", "text": "named"})
		f.result("success", "named", 0.1)
	case "huge", "big":
		size := hugeText
		if scenario == "big" {
			size = 2 << 20
		}
		text := strings.Repeat("x", size-3) + "é!" // a rune across a piece boundary is kept whole
		f.assistant("m1", map[string]any{"type": "text", "text": text})
		f.result("success", "done", 0.5)
	case "malformed":
		f.raw("this is not json")
		f.raw(`{"type":"assistant","message":{"content":[{"type":"text","text":"cut`)
		f.raw(`{}`)
		f.raw(`[1,2,3]`)
		f.raw(`{"type":"assistant","message":"a string where an object belongs"}`)
		f.raw(`{"type":"result","usage":"not an object"}`)
		f.raw(``)
		f.raw(`{"type":"keep_alive"}`)
		f.raw(`{"type":"something_new","x":1}`)
		f.assistant("m1", map[string]any{"type": "text", "text": "ok"})
		f.result("success", "ok", 0.1)
	case "crash-once":
		if !f.hasArg("--resume=") {
			f.assistant("m1", map[string]any{"type": "text", "text": "partial"})
			f.assistant("m1", map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": map[string]any{"file_path": "x"}})
			fmt.Fprintln(os.Stderr, "fake: crashing on purpose")
			os.Exit(3)
		}
		f.assistant("m2", map[string]any{"type": "text", "text": "back again"})
		f.result("success", "back again", 0.2)
	case "hang":
		// A grandchild in a session of its own, as Claude Code runs Bash.
		cmd := exec.Command("sleep", "1000.5")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err == nil {
			f.note(fakeLogEntry{Note: fmt.Sprintf("grandchild %d", cmd.Process.Pid)})
		}
		f.assistant("m1", map[string]any{"type": "text", "text": "working"})
		f.assistant("m1", map[string]any{"type": "tool_use", "id": "toolu_h", "name": "Bash", "input": map[string]any{"command": "sleep 1000.5"}})
		// Never ends, and ignores interrupts.
	case "ask":
		f.assistant("m1", map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": "Bash", "input": map[string]any{"command": "make " + prompt}})
		hook := f.request(fmt.Sprintf("hook-%d", n), map[string]any{"subtype": "hook_callback", "callback_id": "x",
			"input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "make " + prompt}, "tool_use_id": fmt.Sprintf("toolu_%d", n)}})
		var behavior string
		if strings.Contains(string(hook), `"deny"`) {
			behavior = "hook-deny"
		} else {
			resp := f.request(fmt.Sprintf("perm-%d", n), map[string]any{"subtype": "can_use_tool", "tool_name": "Bash",
				"input": map[string]any{"command": "make " + prompt}, "tool_use_id": fmt.Sprintf("toolu_%d", n),
				"permission_suggestions": []any{map[string]any{"type": "addRules", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "make:*"}}, "behavior": "allow", "destination": "localSettings"}}})
			var r struct {
				Behavior           string            `json:"behavior"`
				UpdatedPermissions []json.RawMessage `json:"updatedPermissions"`
			}
			json.Unmarshal(resp, &r)
			behavior = r.Behavior
			if len(r.UpdatedPermissions) > 0 {
				behavior += "+always:" + string(r.UpdatedPermissions[0])
			}
		}
		f.write(map[string]any{"type": "user", "session_id": fakeSessionID, "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d", n), "content": behavior, "is_error": !strings.HasPrefix(behavior, "allow")}}}})
		f.assistant(fmt.Sprintf("m%d", n), map[string]any{"type": "text", "text": behavior})
		f.result("success", behavior, 0.1)
	case "writes":
		f.writes()
	case "images":
		// A Read of a small PNG, then one whose base64 passes what an
		// event may carry, each as Claude Code reports a Read of an image.
		big := strings.Repeat("A", 1<<20+4)
		for i, data := range []string{fakePNG, big} {
			id := fmt.Sprintf("toolu_img%d", i)
			f.assistant(fmt.Sprintf("m%d", i), map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": "x.png"}})
			f.write(map[string]any{"type": "user", "session_id": fakeSessionID, "message": map[string]any{"role": "user",
				"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": []any{
					map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}}}}}}})
		}
		f.assistant("m9", map[string]any{"type": "text", "text": "seen"})
		f.result("success", "seen", 0.1)
	default: // echo
		f.write(map[string]any{"type": "stream_event", "session_id": fakeSessionID, "parent_tool_use_id": nil,
			"event": map[string]any{"type": "message_start", "message": map[string]any{"id": "m1", "model": "fake-model"}}})
		f.write(map[string]any{"type": "stream_event", "session_id": fakeSessionID, "parent_tool_use_id": nil,
			"event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "echo: "}}})
		f.write(map[string]any{"type": "stream_event", "session_id": fakeSessionID, "parent_tool_use_id": nil,
			"event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": prompt}}})
		// The whole message follows the deltas, as with --include-partial-messages.
		f.assistant("m1", map[string]any{"type": "text", "text": "echo: " + prompt})
		f.result("success", "echo: "+prompt, 0.25*float64(n))
	}
}

// writes plays the "writes" scenario: file tools that change files in the
// workspace (the fake writes them itself, as Claude Code would), one whose
// result is an error, one that writes outside the workspace.
func (f *fakeCLI) writes() {
	dir, _ := os.Getwd()
	calls := []struct {
		id, tool, key, path, content string
		failed                       bool
	}{
		{"toolu_w", "Write", "file_path", filepath.Join(dir, "out", "a.txt"), "hello\n", false},
		{"toolu_e", "Edit", "file_path", filepath.Join(dir, "notes.txt"), "two\n", false},
		{"toolu_f", "Write", "file_path", filepath.Join(dir, "failed.txt"), "not really\n", true},
		{"toolu_m", "MultiEdit", "file_path", "multi.txt", "multi edited\n", false},
		{"toolu_o", "Write", "file_path", filepath.Join(filepath.Dir(dir), "outside.txt"), "outside\n", false},
		{"toolu_n", "NotebookEdit", "notebook_path", filepath.Join(dir, "nb.ipynb"), `{"cells":[]}`, false},
		{"toolu_w2", "Write", "file_path", filepath.Join(dir, "out", "a.txt"), "hello again\n", false},
	}
	for i, c := range calls {
		f.assistant(fmt.Sprintf("m%d", i), map[string]any{"type": "tool_use", "id": c.id, "name": c.tool, "input": map[string]any{c.key: c.path}})
		// The PreToolUse hook, as the CLI asks it: its answer also means
		// ferry has taken the lines before it.
		f.request("hook-"+c.id, map[string]any{"subtype": "hook_callback", "callback_id": "x",
			"input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": c.tool, "tool_input": map[string]any{c.key: c.path}, "tool_use_id": c.id}})
		p := c.path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_ = os.MkdirAll(filepath.Dir(p), 0o700)
		_ = os.WriteFile(p, []byte(c.content), 0o600)
		f.write(map[string]any{"type": "user", "session_id": fakeSessionID, "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": c.id, "content": "done", "is_error": c.failed}}}})
	}
	f.assistant("m9", map[string]any{"type": "text", "text": "written"})
	f.result("success", "written", 0.1)
}

// readFakeLog returns the fake's log entries.
func readFakeLog(t *testing.T, path string) []fakeLogEntry {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []fakeLogEntry
	r := bufio.NewReader(fh)
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 {
			var e fakeLogEntry
			if json.Unmarshal(b, &e) == nil {
				out = append(out, e)
			}
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// lastUserLine is the last user line the fake CLI read on its stdin (a
// prompt as ferry wrote it), "" when it read none.
func lastUserLine(t *testing.T, path string) string {
	t.Helper()
	var sent string
	for _, e := range readFakeLog(t, path) {
		if strings.Contains(string(e.Got), `"type":"user"`) {
			sent = string(e.Got)
		}
	}
	return sent
}

// fakeStarts returns the argument lists the fake was started with.
func fakeStarts(t *testing.T, path string) [][]string {
	var out [][]string
	for _, e := range readFakeLog(t, path) {
		if e.Args != nil {
			out = append(out, e.Args)
		}
	}
	return out
}
