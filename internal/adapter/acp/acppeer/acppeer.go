// Package acppeer is a scripted ACP agent for tests: a process that speaks
// ACP on its stdio the way a script says, including the ways real agents
// misbehave (malformed lines, huge lines, crashes, updates after the
// prompt's response, prompts never answered).
//
// A test binary runs it by calling Main from TestMain when the environment
// names a script (EnvScript); every line the peer receives is appended to
// the log file EnvLog names, so a test can check what ferry sent.
//
// The peer answers initialize and session/new (with Script.Init and
// Script.Session merged over defaults), session/set_mode and
// session/set_config_option (an error when Script.SetModeError), and runs Script.Turns[i] for the i-th session/prompt.
// A turn without a respond step is answered end_turn at its end.
package acppeer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Environment variables of the peer.
const (
	// EnvScript is the path of the JSON Script.
	EnvScript = "ACPPEER_SCRIPT"
	// EnvLog is the file every received line is appended to.
	EnvLog = "ACPPEER_LOG"
)

// SessionID is the ACP session id the peer hands out.
const SessionID = "peer-session-1"

// Script is what the peer does.
type Script struct {
	// Init is merged over the default initialize result.
	Init map[string]any `json:"init,omitempty"`
	// Session is merged over the default session/new result.
	Session map[string]any `json:"session,omitempty"`
	// SetModeError makes session/set_mode fail.
	SetModeError bool `json:"set_mode_error,omitempty"`
	// Turns holds the steps of each session/prompt, in order.
	Turns [][]Step `json:"turns"`
	// ByText holds the steps of a prompt whose first text block starts
	// with the key, before Turns (which such a prompt does not use up).
	ByText map[string][]Step `json:"by_text,omitempty"`
}

// Step is one action of a turn; exactly one field is set.
type Step struct {
	// Update is sent as a session/update notification.
	Update map[string]any `json:"update,omitempty"`
	// Text sends an agent_message_chunk with this text.
	Text string `json:"text,omitempty"`
	// Raw is written as it is, as one line (malformed input).
	Raw string `json:"raw,omitempty"`
	// BigChunk sends an agent_message_chunk of this many bytes of 'x'.
	BigChunk int `json:"big_chunk,omitempty"`
	// Request sends a request to the client and waits for its response;
	// with Echo the response's result (or error) comes back as a text
	// chunk "<method> => <json>".
	Request *Request `json:"request,omitempty"`
	// AskAsync sends a session/request_permission without waiting.
	AskAsync map[string]any `json:"ask_async,omitempty"`
	// WaitCancel waits for session/cancel.
	WaitCancel bool `json:"wait_cancel,omitempty"`
	// WaitResponses waits until this many responses to AskAsync requests
	// came, then sends each as a text chunk, in arrival order.
	WaitResponses int `json:"wait_responses,omitempty"`
	// Respond answers the prompt with this result; Then is written in the
	// same write, right after the response.
	Respond map[string]any `json:"respond,omitempty"`
	Then    []Step         `json:"then,omitempty"`
	// RespondError answers the prompt with this JSON-RPC error.
	RespondError map[string]any `json:"respond_error,omitempty"`
	// Hang leaves the prompt unanswered.
	Hang bool `json:"hang,omitempty"`
	// Exit ends the peer at once with this status (a crash).
	Exit *int `json:"exit,omitempty"`
	// SpawnChild starts a long sleep in the peer's process group and
	// sends its pid as a text chunk "child <pid>".
	SpawnChild bool `json:"spawn_child,omitempty"`
}

// Request is a request the peer sends.
type Request struct {
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
	Echo   bool           `json:"echo,omitempty"`
}

type peer struct {
	script Script
	out    io.Writer
	logf   *os.File

	wmu sync.Mutex // one write per line or batch

	mu       sync.Mutex
	nextID   int
	waiting  map[string]chan json.RawMessage // responses by id
	async    []chan json.RawMessage
	cancel   chan struct{}
	turn     int
	children []*exec.Cmd
}

// Main runs the peer on stdin and stdout until stdin ends; it never
// returns.
func Main() {
	code := run(os.Stdin, os.Stdout)
	os.Exit(code)
}

func run(in io.Reader, out io.Writer) int {
	var p peer
	b, err := os.ReadFile(os.Getenv(EnvScript)) // #nosec G304 G703 -- a test peer reads the script its test names
	if err == nil {
		err = json.Unmarshal(b, &p.script)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "acppeer: script:", err)
		return 2
	}
	if name := os.Getenv(EnvLog); name != "" {
		p.logf, err = os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) // #nosec G304 G703 -- the log file its test names
		if err != nil {
			fmt.Fprintln(os.Stderr, "acppeer: log:", err)
			return 2
		}
	}
	p.out = out
	p.waiting = map[string]chan json.RawMessage{}
	p.cancel = make(chan struct{}, 16)
	r := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := r.ReadString('\n')
		if strings.TrimSpace(line) != "" {
			p.receive(line)
		}
		if err != nil {
			return 0
		}
	}
}

type msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (p *peer) receive(line string) {
	if p.logf != nil {
		_, _ = p.logf.WriteString(strings.TrimRight(line, "\n") + "\n")
	}
	var m msg
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		fmt.Fprintln(os.Stderr, "acppeer: bad line:", err)
		return
	}
	switch {
	case m.Method == "" && m.ID != nil: // a response
		res := m.Result
		if m.Error != nil {
			res = json.RawMessage(`{"error":` + string(m.Error) + `}`)
		}
		p.mu.Lock()
		ch := p.waiting[string(m.ID)]
		delete(p.waiting, string(m.ID))
		p.mu.Unlock()
		if ch != nil {
			ch <- res
		}
	case m.Method == "initialize":
		p.result(m.ID, merge(map[string]any{
			"protocolVersion":   1,
			"agentCapabilities": map[string]any{"loadSession": false},
			"agentInfo":         map[string]any{"name": "acppeer", "version": "1"},
			"authMethods":       []any{},
		}, p.script.Init))
	case m.Method == "session/new":
		p.result(m.ID, merge(map[string]any{"sessionId": SessionID}, p.script.Session))
	case m.Method == "session/set_mode" || m.Method == "session/set_config_option":
		if p.script.SetModeError {
			p.write(mustLine(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "no such mode"}}))
			return
		}
		p.result(m.ID, map[string]any{})
	case m.Method == "session/cancel":
		p.cancel <- struct{}{}
	case m.Method == "session/prompt" && p.byText(m.Params) != nil:
		go p.runTurn(m.ID, p.byText(m.Params))
	case m.Method == "session/prompt":
		p.mu.Lock()
		i := p.turn
		p.turn++
		p.mu.Unlock()
		var steps []Step
		if i < len(p.script.Turns) {
			steps = p.script.Turns[i]
		}
		go p.runTurn(m.ID, steps)
	case m.ID != nil:
		p.write(mustLine(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}}))
	}
}

func (p *peer) runTurn(promptID json.RawMessage, steps []Step) {
	for _, st := range steps {
		switch {
		case st.Update != nil:
			p.write(p.update(st.Update))
		case st.Text != "":
			p.write(p.chunk(st.Text))
		case st.Raw != "":
			p.write(st.Raw + "\n")
		case st.BigChunk > 0:
			// Built by hand: marshalling 64 MiB is slow under the race detector.
			p.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + SessionID +
				`","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("x", st.BigChunk) + `"}}}}` + "\n")
		case st.Request != nil:
			ch := p.send(st.Request.Method, st.Request.Params)
			res := <-ch
			if st.Request.Echo {
				p.write(p.chunk(st.Request.Method + " => " + string(res)))
			}
		case st.AskAsync != nil:
			ch := p.send("session/request_permission", merge(map[string]any{"sessionId": SessionID}, st.AskAsync))
			p.mu.Lock()
			p.async = append(p.async, ch)
			p.mu.Unlock()
		case st.WaitCancel:
			<-p.cancel
		case st.WaitResponses > 0:
			p.mu.Lock()
			chans := p.async
			p.async = nil
			p.mu.Unlock()
			for i := 0; i < st.WaitResponses && i < len(chans); i++ {
				p.write(p.chunk("response => " + string(<-chans[i])))
			}
		case st.Respond != nil:
			batch := mustLine(map[string]any{"jsonrpc": "2.0", "id": promptID, "result": st.Respond})
			for _, t := range st.Then {
				switch {
				case t.Text != "":
					batch += p.chunk(t.Text)
				case t.Update != nil:
					batch += p.update(t.Update)
				}
			}
			p.write(batch)
			return
		case st.RespondError != nil:
			p.write(mustLine(map[string]any{"jsonrpc": "2.0", "id": promptID, "error": st.RespondError}))
			return
		case st.Hang:
			return
		case st.Exit != nil:
			os.Exit(*st.Exit)
		case st.SpawnChild:
			cmd := exec.Command("sleep", "1000")
			if err := cmd.Start(); err != nil {
				p.write(p.chunk("spawn failed: " + err.Error()))
				continue
			}
			p.mu.Lock()
			p.children = append(p.children, cmd)
			p.mu.Unlock()
			p.write(p.chunk(fmt.Sprintf("child %d", cmd.Process.Pid)))
		}
	}
	p.write(mustLine(map[string]any{"jsonrpc": "2.0", "id": promptID, "result": map[string]any{"stopReason": "end_turn"}}))
}

// send writes a request and returns where its response will come.
func (p *peer) send(method string, params map[string]any) chan json.RawMessage {
	p.mu.Lock()
	p.nextID++
	id := fmt.Sprint(p.nextID)
	ch := make(chan json.RawMessage, 1)
	p.waiting[id] = ch
	p.mu.Unlock()
	p.write(mustLine(map[string]any{"jsonrpc": "2.0", "id": p.nextIDRaw(id), "method": method, "params": params}))
	return ch
}

func (p *peer) nextIDRaw(id string) json.RawMessage { return json.RawMessage(id) }

func (p *peer) result(id json.RawMessage, res any) {
	p.write(mustLine(map[string]any{"jsonrpc": "2.0", "id": id, "result": res}))
}

func (p *peer) update(u map[string]any) string {
	return mustLine(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": SessionID, "update": u}})
}

func (p *peer) chunk(text string) string {
	return p.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}})
}

func (p *peer) write(s string) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, _ = io.WriteString(p.out, s)
}

func mustLine(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func merge(base, over map[string]any) map[string]any {
	for k, v := range over {
		base[k] = v
	}
	return base
}

// byText is the Script.ByText steps of a prompt, nil for none.
func (p *peer) byText(params json.RawMessage) []Step {
	var pr struct {
		Prompt []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if len(p.script.ByText) == 0 || json.Unmarshal(params, &pr) != nil {
		return nil
	}
	for _, b := range pr.Prompt {
		if b.Type != "text" {
			continue
		}
		for k, steps := range p.script.ByText {
			if strings.HasPrefix(b.Text, k) {
				return steps
			}
		}
		return nil
	}
	return nil
}
