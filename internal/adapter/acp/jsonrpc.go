package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Default bounds of the codec.
const (
	// defaultMaxLine is the longest line parsed: a 64 MiB line (a big tool
	// result) is read and handled; a longer one is skipped without being
	// held in memory.
	defaultMaxLine = 128 << 20
	// readBufSize is the reader's buffer: lines that arrive in one read
	// are handed on together (see conn.readLoop).
	readBufSize = 64 << 10
	// keepBuf is the largest line buffer kept between lines; a bigger one
	// is dropped after use so one huge line does not pin its memory.
	keepBuf = 1 << 20
)

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

// lineReader splits a stream into lines of at most max bytes. A longer
// line is consumed and dropped without being buffered; next reports its
// size instead.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, maxLine int) *lineReader {
	if maxLine <= 0 {
		maxLine = defaultMaxLine
	}
	return &lineReader{r: bufio.NewReaderSize(r, readBufSize), max: maxLine}
}

// next returns the next line without its "\n" (and a "\r" before it).
// A line of more than max bytes (not counting the "\n") is consumed without
// being kept: line is nil and skipped is its length. The line is valid
// until the next call. At the end of the stream the rest after the last
// newline is returned as a last line (possibly empty) with err io.EOF, or
// with the read error.
func (l *lineReader) next() (line []byte, skipped int64, err error) {
	if cap(l.buf) > keepBuf {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	over := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		nl := 0
		if err == nil {
			nl = 1 // the chunk ends with the newline
		}
		if !over && len(l.buf)+len(chunk)-nl > l.max {
			over = true
			skipped = int64(len(l.buf))
			l.buf = l.buf[:0]
		}
		if over {
			skipped += int64(len(chunk) - nl)
		} else {
			l.buf = append(l.buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			return nil, skipped, err
		}
		return bytes.TrimSuffix(l.buf[:len(l.buf)-nl], []byte{'\r'}), 0, err
	}
}

// lineBuffered reports whether a whole line is already buffered, so next
// returns without reading from the stream.
func (l *lineReader) lineBuffered() bool {
	n := l.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := l.r.Peek(n) // never blocks: n bytes are buffered
	return bytes.IndexByte(b, '\n') >= 0
}
