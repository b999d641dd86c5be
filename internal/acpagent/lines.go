package acpagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
)

// maxLine bounds one JSON-RPC message, as the SDK's reader does.
const maxLine = 10 << 20

// filterLines copies the client's lines from in to pw, answering on out
// the ones that are no JSON-RPC message: the SDK would only log them (or,
// for one too long, close the connection), and a client would wait for an
// answer forever.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer, log *slog.Logger) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if tooLong {
			writeError(out, nil, codeInvalidRequest, "Invalid request: a message longer than 10 MiB")
		} else if len(bytes.TrimSpace(line)) > 0 {
			if id, code, msg := check(line); code != 0 {
				log.Info("acp: refused a line", "code", code, "why", msg)
				writeError(out, id, code, msg)
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				log.Info("acp: reading the client", "err", err)
			}
			_ = pw.Close()
			return
		}
	}
}

// readLine reads one line without its end; a line over maxLine is
// dropped whole and reported.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			tooLong = true
			line = nil
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// check returns the JSON-RPC error a line gets (code 0: none), with the
// request's id when it has a usable one.
func check(line []byte) (id json.RawMessage, code int, msg string) {
	if !json.Valid(line) {
		return nil, -32700, "Parse error: the line is not JSON"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, codeInvalidRequest, "Invalid request: a message is one JSON object (batches are not supported)"
	}
	if raw, ok := m["id"]; ok {
		var v any
		_ = json.Unmarshal(raw, &v)
		switch v.(type) {
		case string, float64, nil:
			id = raw
		default:
			return nil, codeInvalidRequest, "Invalid request: id must be a string or a number"
		}
	}
	var version string
	if err := json.Unmarshal(m["jsonrpc"], &version); err != nil || version != "2.0" {
		return id, codeInvalidRequest, `Invalid request: "jsonrpc" must be "2.0"`
	}
	rawMethod, hasMethod := m["method"]
	if hasMethod {
		var method string
		if err := json.Unmarshal(rawMethod, &method); err != nil || method == "" {
			return id, codeInvalidRequest, "Invalid request: method must be a non-empty string"
		}
		return nil, 0, ""
	}
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if id == nil || (!hasResult && !hasError) {
		return id, codeInvalidRequest, "Invalid request: no method, and not a response"
	}
	return nil, 0, ""
}

// writeError writes one JSON-RPC error response.
func writeError(out io.Writer, id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, map[string]any{"code": code, "message": msg}})
	if err != nil {
		return
	}
	_, _ = out.Write(append(b, '\n'))
}
