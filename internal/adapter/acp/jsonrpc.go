package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ferry-dev/ferry/internal/lines"
)

// JSON-RPC 2.0 over newline-delimited JSON, the framing ACP uses on stdio:
// one message per line, UTF-8, no embedded newlines.
//
// ferry reads this with its own codec instead of acp-go-sdk's Connection:
// the SDK scans lines with a 10 MiB bufio.Scanner, so one larger line ends
// the whole connection (ACP agents do send big tool results), it answers
// every inbound request on a goroutine of its own (unbounded), and it logs
// raw lines at error level. The SDK's generated types are used for what
// ferry sends (see wire.go).

// defaultMaxLine is the longest line parsed: a 64 MiB line (a big tool
// result) is read and handled; a longer one is skipped without being held
// in memory (lines.Reader splits the stream).
const defaultMaxLine = lines.DefaultMax

// JSON-RPC error codes ferry sends or reads (JSON-RPC 2.0 and ACP).
const (
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
	rpcAuthRequired   = -32000 // ACP: authentication required
	rpcNotFound       = -32002 // ACP: resource not found
	rpcCancelled      = -32800 // request cancelled
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// message is one decoded JSON-RPC message. Exactly one of the shapes holds:
// a request (Method and ID), a notification (Method, no ID) or a response
// (ID and one of Result or Error).
type message struct {
	// ID is the raw id (a string, a number or null); nil when absent.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *rpcError
}

// isRequest, isNotification and isResponse tell the shapes apart.
func (m *message) isRequest() bool      { return m.Method != "" && m.ID != nil }
func (m *message) isNotification() bool { return m.Method != "" && m.ID == nil }
func (m *message) isResponse() bool     { return m.Method == "" }

// wireIn is the JSON shape read; pointers and raw fields tell absent from
// null.
type wireIn struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// errMalformed marks a line that is not one valid JSON-RPC 2.0 message.
var errMalformed = errors.New("malformed JSON-RPC message")

// parseMessage decodes one line. It accepts exactly the JSON-RPC 2.0 shapes
// (no batches: ACP does not use them) and fails with an error wrapping
// errMalformed for anything else.
func parseMessage(line []byte) (*message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", errMalformed)
	}
	var w wireIn
	if err := json.Unmarshal(line, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if w.JSONRPC == nil || *w.JSONRPC != "2.0" {
		return nil, fmt.Errorf("%w: jsonrpc is not \"2.0\"", errMalformed)
	}
	m := &message{Params: w.Params}
	if w.ID != nil {
		if !validID(w.ID) {
			return nil, fmt.Errorf("%w: id is not a string, number or null", errMalformed)
		}
		m.ID = w.ID
	}
	if len(w.Params) > 0 && w.Params[0] != '{' && w.Params[0] != '[' && !isNull(w.Params) {
		return nil, fmt.Errorf("%w: params is not an object or array", errMalformed)
	}
	if w.Method != nil {
		if *w.Method == "" {
			return nil, fmt.Errorf("%w: empty method", errMalformed)
		}
		if w.Result != nil || w.Error != nil {
			return nil, fmt.Errorf("%w: a request carries a result or error", errMalformed)
		}
		m.Method = *w.Method
		return m, nil
	}
	switch {
	case w.ID == nil:
		return nil, fmt.Errorf("%w: neither a method nor an id", errMalformed)
	case w.Params != nil:
		return nil, fmt.Errorf("%w: a response carries params", errMalformed)
	case (w.Result != nil) == (w.Error != nil && !isNull(w.Error)):
		return nil, fmt.Errorf("%w: a response needs exactly one of result and error", errMalformed)
	}
	if w.Result != nil {
		m.Result = w.Result
		return m, nil
	}
	var e rpcError
	if err := json.Unmarshal(w.Error, &e); err != nil {
		return nil, fmt.Errorf("%w: error object: %w", errMalformed, err)
	}
	m.Error = &e
	return m, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// validID reports whether raw is a JSON string, number or null.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true // json.Unmarshal already checked the string
	case c == 'n':
		return isNull(raw)
	case c == '-' || '0' <= c && c <= '9':
		return true
	}
	return false
}

// idKey is the key that matches a response to ferry's request: ferry's
// ids are integers, written by encoding/json, and echoed back verbatim.
func idKey(raw json.RawMessage) string { return string(bytes.TrimSpace(raw)) }

// wireOut is the JSON shape written.
type wireOut struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  any             `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// encodeLine writes w as one line, newline included.
func encodeLine(w wireOut) ([]byte, error) {
	w.JSONRPC = "2.0"
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("acp: encode %s: %w", w.Method, err)
	}
	return append(b, '\n'), nil
}

func encodeRequest(id int64, method string, params any) ([]byte, error) {
	return encodeLine(wireOut{ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: params})
}

func encodeNotification(method string, params any) ([]byte, error) {
	return encodeLine(wireOut{Method: method, Params: params})
}

// encodeResult answers request id; a nil result is sent as {}.
func encodeResult(id json.RawMessage, result any) ([]byte, error) {
	if result == nil {
		result = struct{}{}
	}
	return encodeLine(wireOut{ID: id, Result: result})
}

func encodeError(id json.RawMessage, e *rpcError) ([]byte, error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	return encodeLine(wireOut{ID: id, Error: e})
}
