package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzMCPLine: whatever one line of ferry mcp's input holds, it is either
// passed to the server as one message the SDK decodes (so it cannot end the
// connection) or answered with one JSON-RPC error line (-32700 or -32600)
// that is itself a valid response, and the line after it is still read.
// The seed corpus is in testdata/fuzz/FuzzMCPLine.
func FuzzMCPLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.ReplaceAll(line, []byte("\n"), nil)
		if refusal := checkMCPLine(line); refusal == nil {
			if len(bytes.TrimSpace(line)) > 0 {
				if _, err := jsonrpc.DecodeMessage(line); err != nil {
					t.Fatalf("passed %q, which the SDK cannot decode: %v", line, err)
				}
			}
		} else {
			checkRefusalAnswer(t, refusal.answer())
		}
		// Through the reader: the line, then a ping that must still pass.
		pend := newPendingRequests()
		var answers bytes.Buffer
		w := &answerWriter{w: &answers, p: pend}
		// Nothing answers the requests passed on: a done ctx ends the
		// wait for their answers at the end of input.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := &requestReader{ctx: ctx, p: pend, w: w,
			r: strings.NewReader(string(line) + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")}
		passed, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(passed, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")) {
			t.Fatalf("the line after %q was not passed on: %q", line, passed)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(answers.Bytes()), []byte("\n")) {
			if len(l) > 0 {
				checkRefusalAnswer(t, append(l, '\n'))
			}
		}
	})
}

// checkRefusalAnswer fails t unless b is one JSON-RPC error answer line
// with a parse or invalid request code.
func checkRefusalAnswer(t *testing.T, b []byte) {
	t.Helper()
	if bytes.Count(b, []byte("\n")) != 1 || !bytes.HasSuffix(b, []byte("\n")) {
		t.Fatalf("answer %q is not one line", b)
	}
	msg, err := jsonrpc.DecodeMessage(b[:len(b)-1])
	if err != nil {
		// A refusal of a line whose id could not be read has id null,
		// which the SDK reads as no response: check it as JSON.
		var v struct {
			ID    any `json:"id"`
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &v) != nil || v.ID != nil || (v.Error.Code != rpcParseError && v.Error.Code != rpcInvalidRequest) {
			t.Fatalf("answer %q: %v", b, err)
		}
		return
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		t.Fatalf("answer %q is not an error response", b)
	}
	var we *jsonrpc.Error
	if !errors.As(resp.Error, &we) || (we.Code != rpcParseError && we.Code != rpcInvalidRequest) {
		t.Fatalf("answer %q: code not -32700 or -32600", b)
	}
}
